package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ratelab/ratelab"
)

// Scenario is one row of a report: a model, an app (store, limit, window)
// and a workload.
type Scenario struct {
	Model    Model
	App      App
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

// Pass reports whether the row saw what the model predicts.
func (r Row) Pass() bool { return len(r.Problems) == 0 }

// !+expect

// Expect predicts how many of the workload's requests a model lets through
// with a store, and says why. This is the lesson in one function.
func Expect(s Scenario) (ok int, why string) {
	n, limit := s.Workload.Requests, s.App.Limit
	shares := func(parts int) (ok int) { // round-robin: part p gets every parts-th request
		for p := range parts {
			ok += min(n/parts+btoi(p < n%parts), limit)
		}
		return ok
	}
	k, err := kindOf(s.App.Store)
	switch {
	case err != nil:
		return 0, err.Error()
	case s.Outage && s.App.FailPolicy != ratelab.FailLocal:
		return n, "never 429: the store cannot answer, and fail-open lets every hit through uncounted"
	case s.Outage: // fail-local: the memory store's counts, for another reason
		ok, _ := Expect(Scenario{Model: s.Model, App: App{Store: Memory, Limit: limit}, Workers: s.Workers, Workload: s.Workload})
		return ok, map[Model]string{
			Single: fmt.Sprintf("429 from #%d: each process decides alone, and there is one", limit+1),
			Pool:   fmt.Sprintf("%d workers × %d = %d let through: each worker decides alone", s.Workers, limit, s.Workers*limit),
			CGI:    "never 429: each process decides alone and serves one request — no better than fail-open",
		}[s.Model]
	case k.Reach == AllHosts:
		return min(n, limit), fmt.Sprintf("429 from #%d: every process on every host shares %s", limit+1, k.Shares)
	case k.Reach == OneMachine && s.Model == TwoHosts:
		return shares(2), fmt.Sprintf("2 hosts × %d = %d let through: flock(2) stops at each machine's edge", limit, 2*limit)
	case k.Reach == OneMachine:
		return min(n, limit), fmt.Sprintf("429 from #%d in every model: all processes share %s", limit+1, k.Shares)
	case s.Model == TwoHosts:
		return shares(2 * s.Workers), fmt.Sprintf("%d workers × %d: each worker's map counts only its share", 2*s.Workers, limit)
	}
	switch s.Model {
	case Pool:
		k := s.Workers
		return shares(k), fmt.Sprintf("%d workers × %d = %d let through: each worker's map counts only its share", k, limit, k*limit)
	case CGI:
		return n, "never 429: every request is a new process whose map starts empty"
	}
	return min(n, limit), fmt.Sprintf("429 from #%d: one process, one map (works on my machine)", limit+1)
}

// !-expect

// Run runs one scenario on a fresh host and reports what it saw. An error
// means the harness itself failed (a child did not start, crashed, or gave
// no result); a row whose counts differ from Expect has Problems instead.
func Run(ctx context.Context, s Scenario) (Row, error) {
	row := Row{Scenario: s}
	row.WantOK, row.Why = Expect(s)
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
	if r.Model != CGI && (r.tally.Allowed != int64(r.OK) || r.tally.Throttled != int64(r.Throttled)) {
		// Each worker counts what it answered; together they must agree
		// with what the client saw.
		r.Problems = append(r.Problems, fmt.Sprintf("workers report %d allowed and %d throttled, the client saw %d and %d",
			r.tally.Allowed, r.tally.Throttled, r.OK, r.Throttled))
	}
	want := map[Model]int{Single: 1, Pool: r.Workers, CGI: r.Workload.Requests, TwoHosts: 2 * r.Workers}[r.Model]
	if r.Processes != want {
		r.Problems = append(r.Problems, fmt.Sprintf("%d processes answered, expected %d", r.Processes, want))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
func Demo(ctx context.Context, app App, workers int, w Workload, dir string, progress io.Writer) (Report, error) {
	var cases []Case
	for _, m := range Models() {
		cases = append(cases, Case{m, app})
	}
	return RunCases(ctx, Report{Store: string(app.Store)}, cases, workers, w, dir, nil, progress)
}

// Case is one row of a demonstration, before its workload: a model and
// the app it serves.
type Case struct {
	Model Model
	App   App
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
			if a.Store == File {
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
