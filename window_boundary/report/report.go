// Package report is the window-boundary demonstration (ratelab boundary,
// make demo-boundary) and its charts (make figures): package
// windowboundary's measurements of every algorithm on one pattern of
// traffic after another, its claims checked, printed and drawn — and the
// same edge sent through real processes and a shared store
// (CrossProcessBurst), which must decide as one process did.
package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// Config is a boundary demonstration's parameters.
type Config struct {
	Limit  int
	Window time.Duration
	Burst  int       // GCRA's burst
	Seed   uint64    // random traffic
	T0     time.Time // a multiple of Window: where the fixed window opens
	Dir    string    // the file store's of the cross-process run; "" skips it
}

// DefaultConfig is 30 per hour, as the original, from 2026-07-09T00:00Z.
func DefaultConfig() Config {
	return Config{Limit: 30, Window: time.Hour, Burst: 5, Seed: 1,
		T0: time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)}
}

// Row is one algorithm's measurements.
type Row struct {
	Name                    string
	Bound                   string
	BoundValue              int
	Edge, Paced, Random     int // most accepted in one window-long span
	EdgeInSecond            int // most accepted within one second at the edge
	EdgeAccepts             []int
	WronglyAllowed, Refused int // sliding counter only: against the exact count
}

// Pass reports whether the row stayed within its bound on every pattern.
func (r Row) Pass() bool { return max(r.Edge, r.Paced, r.Random) <= r.BoundValue }

// Report is a whole demonstration.
type Report struct {
	Config Config
	Rows   []Row
	Bursts []Burst // cross-process, through the file store
	Errors []string
}

// Pass reports whether every claim held.
func (r Report) Pass() bool { return len(r.Errors) == 0 && len(r.Rows) > 0 }

// bounds are the claims, checked against every pattern.
func bounds(c Config) map[string]int {
	return map[string]int{
		"fixed window":        2 * c.Limit,
		"sliding log":         c.Limit,
		"sliding counter":     2*c.Limit - 1,
		"GCRA / token bucket": c.Limit + c.Burst,
	}
}

// Demo measures every algorithm on the edge, paced and random patterns,
// and, if c.Dir is set, runs the edge pattern across processes through the
// file store with each of its algorithms.
func Demo(c Config) (Report, error) {
	rep := Report{Config: c}
	p := patterns{
		edge:   windowboundary.Edge(c.Limit, c.Window, c.T0),
		paced:  windowboundary.Paced(c.Limit, c.Window, c.T0),
		random: windowboundary.Random(c.Seed, 20*c.Limit, 10*c.Window, c.T0),
	}
	for i := range windowboundary.All(c.Limit, c.Window, c.Burst) {
		row, err := measure(c, i, p)
		if err != nil {
			return rep, fmt.Errorf("windowboundary: %s: %w", row.Name, err)
		}
		if !row.Pass() {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s accepted %d in one window, above its bound %d", row.Name, max(row.Edge, row.Paced, row.Random), row.BoundValue))
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.checkClaims()
	if c.Dir == "" {
		return rep, nil
	}
	return rep, rep.crossProcess()
}

// patterns are the request times Demo measures every algorithm on.
type patterns struct{ edge, paced, random []time.Time }

// measure runs the algorithm at index i of All on each pattern, each time
// on a fresh store, and returns its row, or the first store error met.
func measure(c Config, i int, p patterns) (Row, error) {
	fresh := func() windowboundary.Algorithm { return windowboundary.All(c.Limit, c.Window, c.Burst)[i] }
	onEdge, onPaced, onRandom := fresh(), fresh(), fresh()
	row := Row{Name: onEdge.Name(), Bound: onEdge.Bound(), BoundValue: bounds(c)[onEdge.Name()]}
	acc := windowboundary.Run(onEdge, p.edge)
	row.Edge, _ = windowboundary.MaxIn(acc, c.Window)
	row.EdgeInSecond, _ = windowboundary.MaxIn(acc, time.Second)
	for _, at := range []time.Time{c.T0, c.T0.Add(c.Window - time.Second), c.T0.Add(c.Window)} {
		row.EdgeAccepts = append(row.EdgeAccepts, countAt(acc, at))
	}
	row.Paced, _ = windowboundary.MaxIn(windowboundary.Run(onPaced, p.paced), c.Window)
	row.Random, _ = windowboundary.MaxIn(windowboundary.Run(onRandom, p.random), c.Window)
	if onEdge.(*windowboundary.Limited).Rule.Algorithm == ratelab.SlidingCounter {
		row.WronglyAllowed, row.Refused = windowboundary.CounterError(c.Limit, c.Window, p.random)
	}
	for _, a := range []windowboundary.Algorithm{onEdge, onPaced, onRandom} {
		if l, ok := a.(*windowboundary.Limited); ok && l.Err() != nil {
			return row, l.Err()
		}
	}
	return row, nil
}

// countAt counts the times in ts equal to at.
func countAt(ts []time.Time, at time.Time) int {
	n := 0
	for _, t := range ts {
		if t.Equal(at) {
			n++
		}
	}
	return n
}

// checkClaims checks the claims the chapter makes, exactly.
func (r *Report) checkClaims() {
	c := r.Config
	if f := r.Rows[0]; f.Edge != 2*c.Limit {
		r.Errors = append(r.Errors, fmt.Sprintf("fixed window accepted %d at the edge, claimed 2 × limit = %d", f.Edge, 2*c.Limit))
	}
	if l := r.Rows[1]; l.Edge > c.Limit || l.Paced > c.Limit || l.Random > c.Limit {
		r.Errors = append(r.Errors, "the sliding log accepted more than limit in one window")
	}
}

// crossProcess runs the edge pattern across processes, through the file
// store in Config.Dir, with each algorithm. The shared store must decide
// exactly as the in-memory store did in one process: the same step,
// shared state.
func (r *Report) crossProcess() error {
	c := r.Config
	for i, a := range windowboundary.All(c.Limit, c.Window, c.Burst) {
		l := a.(*windowboundary.Limited)
		dir := fmt.Sprintf("%s/%s", c.Dir, l.Rule.Algorithm)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		b, err := CrossProcessBurst(Target{Store: harness.File, Dir: dir}, l.Rule, c.T0)
		if err != nil {
			return err
		}
		if want := r.Rows[i].Edge; b.MaxInWindow != want {
			r.Errors = append(r.Errors, fmt.Sprintf("%s across processes (%s) accepted %d in one window, in one process %d", b.Store, l.Name(), b.MaxInWindow, want))
		}
		r.Bursts = append(r.Bursts, b)
	}
	return nil
}

// Print writes the table, the edge timeline and the cross-process runs.
func (r Report) Print(out io.Writer) {
	r.printTable(out)
	r.printEdge(out)
	if len(r.Bursts) > 0 {
		r.printBursts(out)
	}
	fmt.Fprintln(out)
	for _, e := range r.Errors {
		fmt.Fprintln(out, "FAIL:", e)
	}
}

// printTable writes each algorithm's most accepted in one window on each
// pattern, against its bound, and what the patterns are.
func (r Report) printTable(out io.Writer) {
	c := r.Config
	fmt.Fprintf(out, "limit %d per %s, GCRA burst %d; most requests accepted in any %s span (both ends included)\n\n", c.Limit, dur(c.Window), c.Burst, dur(c.Window))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "algorithm\tedge\tpaced\trandom\tbound\tverdict")
	for _, row := range r.Rows {
		v := "ok"
		if !row.Pass() {
			v = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d (%s)\t%s\n", row.Name, row.Edge, row.Paced, row.Random, row.BoundValue, row.Bound, v)
	}
	tw.Flush()
	fmt.Fprintf(out, "\nedge: 1 request at the window's start, %d one second before its reset, %d at the reset\n", c.Limit, c.Limit)
	fmt.Fprintf(out, "paced: %d in the last second of a window, then one every %s\n", c.Limit, dur(c.Window/time.Duration(c.Limit)))
	fmt.Fprintf(out, "random: %d requests in bursts over %s, seed %d\n", 20*c.Limit, dur(10*c.Window), c.Seed)
	for _, row := range r.Rows {
		if row.Name == "sliding counter" {
			fmt.Fprintf(out, "sliding counter against the exact count it approximates (random): %d wrongly allowed, %d wrongly refused of %d\n",
				row.WronglyAllowed, row.Refused, 20*c.Limit)
		}
	}
}

// printEdge writes how many each algorithm accepted at each instant of
// the edge pattern.
func (r Report) printEdge(out io.Writer) {
	c := r.Config
	fmt.Fprintf(out, "\nthe edge, accepted per instant:\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "\tt0\tt0+%s\tt0+%s\tin 1s\tin %s\t\n", dur(c.Window-time.Second), dur(c.Window), dur(c.Window))
	for _, row := range r.Rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t  %s\n", row.Name, row.EdgeAccepts[0], row.EdgeAccepts[1], row.EdgeAccepts[2],
			row.EdgeInSecond, row.Edge, strings.Repeat("█", row.Edge))
	}
	tw.Flush()
}

// printBursts writes the edge pattern's runs across processes, each next
// to the same algorithm in one process.
func (r Report) printBursts(out io.Writer) {
	fmt.Fprintf(out, "\nthe edge across processes, one process per request, each told its instant:\n\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "store\talgorithm\tprocesses\taccepted\tin one window\tas in one process")
	for i, b := range r.Bursts {
		same := "yes"
		if b.MaxInWindow != r.Rows[i].Edge {
			same = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\n", b.Store, b.Algorithm, b.Requests, b.Accepted, b.MaxInWindow, same)
	}
	tw.Flush()
}

// Claim is what the demonstration claims when it passes.
const Claim = "every figure is within its bound; the fixed window takes 2 × limit at its edge"

// dur prints a duration without its zero parts: 1h, 59m59s, 2m.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
