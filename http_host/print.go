package httphost

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratelab/ratelab/harness"
)

// Print writes the report as a table, one line per row, with a verdict.
func (r Report) Print(out io.Writer) { r.print(out, true) }

// PrintStable writes the report without wall times, so that two runs of
// the same demo with a fixed clock print the same bytes.
func (r Report) PrintStable(out io.Writer) { r.print(out, false) }

func (r Report) print(out io.Writer, wall bool) {
	if len(r.Rows) == 0 {
		return
	}
	first := r.Rows[0]
	workers := fmt.Sprintf("pool of %d workers", first.Workers)
	if first.Model == harness.TwoHosts {
		workers = fmt.Sprintf("%d workers per pool or host", first.Workers)
	}
	fmt.Fprintf(out, "store=%s  limit %d per %d s  %d requests from 127.0.0.1  %s\n\n",
		r.Store, first.App.Limit, int64(first.App.Window/time.Second), first.Workload.Requests, workers)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	wallHead := "\twall"
	if !wall {
		wallHead = ""
	}
	mixed := strings.Contains(r.Store, ",")
	if mixed {
		fmt.Fprint(tw, "store\t")
	}
	fmt.Fprintln(tw, "model\tmode\tprocs\t200s\t429s\tfirst 429\teffective limit\tRetry-After"+wallHead+"\t\tverdict")
	for _, row := range r.Rows {
		first, ra, eff := "-", "-", fmt.Sprintf("≥ %d", row.OK)
		if row.First429 != 0 {
			ra = fmt.Sprintf("%ds", row.RetryAfter)
			eff = fmt.Sprint(row.OK)
			if !row.Workload.Burst() {
				first = fmt.Sprintf("#%d", row.First429)
			}
		}
		verdict := "ok  " + row.Why
		if !row.Pass() {
			verdict = "FAIL " + strings.Join(row.Problems, "; ") + " — the model predicts: " + row.Why
		}
		wallCell := fmt.Sprintf("\t%.2fs", row.Wall.Seconds())
		if !wall {
			wallCell = ""
		}
		if mixed {
			fmt.Fprintf(tw, "%s\t", row.App.Store)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s%s\t\t%s\n", row.Model, modeName(row.Workload),
			row.Processes, row.OK, row.Throttled, first, eff, ra, wallCell, verdict)
	}
	tw.Flush()
	fmt.Fprint(out, legend)
}

// legend explains the columns a reader asks about.
const legend = `
first 429: the number of the first refused request, one by one; - where none was refused, or in a burst, whose requests race, so no number is claimed.
effective limit: the 200s of a row with refusals; "≥ N" where none was refused: no limit was reached by the N sent.
Retry-After: what the first 429 said; - where none was refused.
`
