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
	switch {
	case s.Outage && s.App.FailPolicy != ratelab.FailLocal:
		return n, "never 429: the store cannot answer, and fail-open lets every hit through uncounted"
	case s.Outage: // fail-local: the memory store's counts, for another reason
		ok, _ := Expect(Scenario{Model: s.Model, App: App{Store: "memory", Limit: limit}, Workers: s.Workers, Workload: s.Workload})
		return ok, map[Model]string{
			Single: fmt.Sprintf("429 from #%d: each process decides alone, and there is one", limit+1),
			Pool:   fmt.Sprintf("%d workers × %d = %d let through: each worker decides alone", s.Workers, limit, s.Workers*limit),
			CGI:    "never 429: each process decides alone and serves one request — no better than fail-open",
		}[s.Model]
	case s.App.Store == "redis":
		return min(n, limit), fmt.Sprintf("429 from #%d: every process on every host shares one Redis", limit+1)
	case s.App.Store == "mysql" || s.App.Store == "postgres":
		return min(n, limit), fmt.Sprintf("429 from #%d: every process on every host shares one database", limit+1)
	case s.App.Store == "file" && s.Model == TwoHosts:
		return shares(2), fmt.Sprintf("2 hosts × %d = %d let through: flock(2) stops at each machine's edge", limit, 2*limit)
	case s.App.Store == "file":
		return min(n, limit), fmt.Sprintf("429 from #%d in every model: all processes share one file", limit+1)
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
func Demo(ctx context.Context, store string, app App, workers int, w Workload, dir string, progress io.Writer) (Report, error) {
	var rows []modelStore
	for _, m := range Models() {
		rows = append(rows, modelStore{m, store})
	}
	return runRows(ctx, Report{Store: store}, rows, app, workers, w, dir, nil, progress, nil)
}

// Unreachable is the Redis of OutageDemo: a port on loopback that nobody
// listens on, so every connection is refused at once.
const Unreachable = "redis://127.0.0.1:1/0"

// OutageDemo runs every model, one by one and as a burst, with a shared
// store that cannot answer — a Redis nobody listens for — under
// app.FailPolicy: fail-open lets every hit through; fail-local decides in
// each process alone, which is the in-memory store's lesson again.
func OutageDemo(ctx context.Context, app App, workers int, w Workload, progress io.Writer) (Report, error) {
	app.RedisURL = Unreachable
	var rows []modelStore
	for _, m := range Models() {
		rows = append(rows, modelStore{m, "redis"})
	}
	rep := Report{Store: "redis (nobody listening) fail=" + app.FailPolicy.String(), Outage: true}
	return runRows(ctx, rep, rows, app, workers, w, "", nil, progress, nil)
}

// RedisDemo runs the two-hosts model with the file store and with Redis,
// and Redis under the other models, one by one and as a burst. reset runs
// before every row so that each starts with an empty Redis.
func RedisDemo(ctx context.Context, app App, workers int, w Workload, dir, redisURL string, reset func() error, progress io.Writer) (Report, error) {
	app.RedisURL = redisURL
	rows := []modelStore{{TwoHosts, "file"}, {TwoHosts, "redis"}, {Single, "redis"}, {Pool, "redis"}, {CGI, "redis"}}
	return runRows(ctx, Report{Store: "file, redis"}, rows, app, workers, w, dir, reset, progress, nil)
}

// DatabaseDemo runs the two-hosts model with the file store, then with
// each database store whose DSN dsns holds ("mysql", "postgres"), one by
// one and as a burst. reset runs before every row so that each starts with
// empty tables.
func DatabaseDemo(ctx context.Context, app App, workers int, w Workload, dir string, dsns map[string]string, reset func() error, progress io.Writer) (Report, error) {
	rows := []modelStore{{TwoHosts, "file"}}
	for _, st := range []string{"mysql", "postgres"} {
		if dsns[st] != "" {
			rows = append(rows, modelStore{TwoHosts, st})
		}
	}
	return runRows(ctx, Report{Store: "file, databases"}, rows, app, workers, w, dir, reset, progress, dsns)
}

type modelStore struct {
	model Model
	store string
}

// runRows runs each row one request at a time, then each as a burst if the
// workload has one, each on a fresh host with fresh state: a new directory
// under dir for the file store, and reset (if not nil) before every row.
// dsns are the database stores' DSNs, by store.
func runRows(ctx context.Context, rep Report, rows []modelStore, app App, workers int, w Workload, dir string, reset func() error, progress io.Writer, dsns map[string]string) (Report, error) {
	modes := []Workload{{Requests: w.Requests, Concurrency: 1}, w}
	if !w.Burst() {
		modes = modes[:1]
	}
	for _, mode := range modes {
		for _, r := range rows {
			a := app
			a.Store = r.store
			if dsn, ok := dsns[r.store]; ok {
				a.DSN = dsn
			}
			if r.store == "file" {
				d, err := os.MkdirTemp(dir, string(r.model)+"-")
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
				fmt.Fprintf(progress, "running %s / %s / %s …\n", r.model, r.store, modeName(mode))
			}
			s := Scenario{Model: r.model, App: a, Workers: workers, Workload: mode, Outage: rep.Outage}
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
