package httphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ratelab/ratelab/harness"
)

// Scenario is one row of a report: a model, an app (store, limit, window)
// and a workload.
type Scenario struct {
	Model    harness.Model
	App      harness.App
	Workers  int
	Workload Workload
	Exe      string    // see Config.Exe
	Stderr   io.Writer // see Config.Stderr
	// Outage says that the App's store cannot be reached: every hit
	// follows App.FailPolicy (open or local).
	Outage bool
}

// Row is what one scenario did, beside what it was expected to do.
type Row struct {
	Scenario
	OK, Throttled int
	First429      int // request number of the first 429; 0 if none
	RetryAfter    int // seconds, of the first 429
	Processes     int // distinct processes that answered
	Wall          time.Duration
	WantOK        int    // 200s the model predicts
	Why           string // the model's explanation of WantOK
	Problems      []string
	responses     []Response
	tally         Tally // the workers' own counts; zero under cgi
}

// Expected is what harness.Expect predicts s from.
func (s Scenario) Expected() harness.Scenario {
	return harness.Scenario{Model: s.Model, App: s.App, Workers: s.Workers, Requests: s.Workload.Requests, Outage: s.Outage}
}

// Pass reports whether the row saw what the model predicts.
func (r Row) Pass() bool { return len(r.Problems) == 0 }

// Run runs one scenario on a fresh host and reports what it saw. An error
// means the harness itself failed (a child did not start, crashed, or gave
// no result); a row whose counts differ from Expect has Problems instead.
func Run(ctx context.Context, s Scenario) (Row, error) {
	row := Row{Scenario: s}
	row.WantOK, row.Why = harness.Expect(s.Expected())
	h, err := Start(Config{Model: s.Model, App: s.App, Workers: s.Workers, Exe: s.Exe, Stderr: s.Stderr})
	if err != nil {
		return row, err
	}
	start := time.Now()
	resps, sendErr := Send(ctx, h.URL, s.Workload)
	row.Wall = time.Since(start)
	if err := errors.Join(sendErr, h.Close()); err != nil {
		return row, fmt.Errorf("%s/%s: %w", s.Model, s.App.Store, err)
	}
	row.tally = h.Tally()

	pids := map[int]bool{}
	for i, r := range resps {
		pids[r.Pid] = true
		if r.Status == 200 {
			row.OK++
			continue
		}
		row.Throttled++
		if row.First429 == 0 {
			row.First429, row.RetryAfter = i+1, r.RetryAfter
		}
	}
	row.Processes = len(pids)
	row.responses = resps
	return Recheck(row), nil
}

// Recheck judges a row again against its WantOK, from the answers it
// recorded, replacing its Problems.
func Recheck(r Row) Row {
	r.Problems = nil
	r.check(r.responses)
	return r
}

func (r *Row) check(resps []Response) {
	if r.OK != r.WantOK {
		r.Problems = append(r.Problems, fmt.Sprintf("expected %d allowed, saw %d", r.WantOK, r.OK))
	}
	if !r.Workload.Burst() {
		// One by one, every model allows a prefix: the first 429 comes right
		// after the last 200, and nothing after it is allowed.
		for i, resp := range resps {
			if want := i < r.WantOK; (resp.Status == 200) != want {
				r.Problems = append(r.Problems, fmt.Sprintf("request #%d: got %d", i+1, resp.Status))
				break
			}
		}
	}
	if r.First429 != 0 {
		// The window opened with the first request, at most Wall ago.
		window := int(r.App.Window / time.Second)
		slack := int(r.Wall/time.Second) + 1
		if !r.App.Now.IsZero() { // a fixed clock: exact
			slack = 0
		}
		if r.RetryAfter > window || r.RetryAfter < window-slack {
			r.Problems = append(r.Problems, fmt.Sprintf("Retry-After %ds, expected %d−%ds", r.RetryAfter, window-slack, window))
		}
	}
	if r.Model != harness.CGI && (r.tally.Allowed != int64(r.OK) || r.tally.Throttled != int64(r.Throttled)) {
		// Each worker counts what it answered; together they must agree
		// with what the client saw.
		r.Problems = append(r.Problems, fmt.Sprintf("workers report %d allowed and %d throttled, the client saw %d and %d",
			r.tally.Allowed, r.tally.Throttled, r.OK, r.Throttled))
	}
	want := map[harness.Model]int{harness.Single: 1, harness.Pool: r.Workers, harness.CGI: r.Workload.Requests, harness.TwoHosts: 2 * r.Workers}[r.Model]
	if r.Processes != want {
		r.Problems = append(r.Problems, fmt.Sprintf("%d processes answered, expected %d", r.Processes, want))
	}
}

// Report is a demo's rows.
type Report struct {
	Store  string
	Outage bool // the store could not be reached (OutageDemo)
	Rows   []Row
}

// Pass reports whether every row saw what its model predicts.
func (r Report) Pass() bool {
	for _, row := range r.Rows {
		if !row.Pass() {
			return false
		}
	}
	return len(r.Rows) > 0
}

// Demo runs every model with one store, first one request at a time, then
// as a concurrent burst. The file store of each row starts empty, in a
// directory of its own under dir.
func Demo(ctx context.Context, app harness.App, workers int, w Workload, dir string, progress io.Writer) (Report, error) {
	var cases []Case
	for _, m := range harness.Models() {
		cases = append(cases, Case{m, app})
	}
	return RunCases(ctx, Report{Store: string(app.Store)}, cases, workers, w, dir, nil, progress)
}

// Case is one row of a demonstration, before its workload: a model and
// the app it serves.
type Case struct {
	Model harness.Model
	App   harness.App
}

// RunCases runs each case one request at a time, then each as a burst if
// the workload has one, each on a fresh host with fresh state: a new
// directory under dir for the file store, and reset (if not nil) before
// every row.
func RunCases(ctx context.Context, rep Report, cases []Case, workers int, w Workload, dir string, reset func() error, progress io.Writer) (Report, error) {
	modes := []Workload{{Requests: w.Requests, Concurrency: 1}, w}
	if !w.Burst() {
		modes = modes[:1]
	}
	for _, mode := range modes {
		for _, c := range cases {
			a := c.App
			if a.Store == harness.File {
				d, err := os.MkdirTemp(dir, string(c.Model)+"-")
				if err != nil {
					return rep, err
				}
				a.Dir = d
			}
			if reset != nil {
				if err := reset(); err != nil {
					return rep, err
				}
			}
			if progress != nil {
				fmt.Fprintf(progress, "running %s / %s / %s …\n", c.Model, a.Store, modeName(mode))
			}
			s := Scenario{Model: c.Model, App: a, Workers: workers, Workload: mode, Outage: rep.Outage}
			if rep.Outage {
				s.Stderr = io.Discard // a warning per hit, each the fail policy doing its job
			}
			row, err := Run(ctx, s)
			if err != nil {
				return rep, err
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	return rep, nil
}

func modeName(w Workload) string {
	if w.Burst() {
		return fmt.Sprintf("burst×%d", w.Concurrency)
	}
	return "one by one"
}
