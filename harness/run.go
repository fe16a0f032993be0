package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/childproc"
)

// roleHits is the harness's child role: one process of the endpoint,
// which takes its hits from its parent, a line each, instead of from a
// web server (package httphost serves the same models over HTTP).
const roleHits = "harness/hits"

// Lines a hits child prints for its parent.
const (
	readyLine  = "ratelab-hits ready"
	answerLine = "ratelab-hits answer "
)

// Client is the address every hit of a run comes from: one client, as in
// the original's story (TEST-NET-1, RFC 5737).
const Client = "192.0.2.1"

// MaxWorkers bounds a pool (per host for two-hosts): each worker is a
// process with its own descriptors and memory.
const MaxWorkers = 64

// Roles are the harness's child roles, for childproc.RunIfChild. A binary
// that runs the harness's models must pass them to RunIfChild first thing.
func Roles() childproc.Roles { return childproc.Roles{roleHits: hitsChild} }

// Result is what one run saw.
type Result struct {
	Allowed, Refused int
	FirstRefused     int // the number of the first refused request; 0 if none
	Processes        int // distinct processes that answered
}

// Run sends s.Requests hits from one client, one at a time, through the
// processes of s.Model, each the current binary re-executed: under
// single one process takes them all; under pool s.Workers processes take
// them in turn; under cgi each hit is a new process, which takes it and
// exits. It runs single, pool and cgi with a store that answers; two
// hosts and an outage are package httphost's. An error means a process
// failed (its stderr is in it); counts unlike Expect's are a Result.
func Run(s Scenario) (r Result, err error) {
	app, err := s.App.Check()
	if err != nil {
		return Result{}, err
	}
	procs := map[Model]int{Single: 1, Pool: s.Workers}[s.Model]
	if _, err := ParseModel(string(s.Model)); err != nil {
		return Result{}, err
	}
	switch {
	case s.Model == TwoHosts || s.Outage:
		return Result{}, errors.New("harness: Run runs single, pool and cgi with a store that answers; two hosts and outages are httphost's")
	case s.Model == Pool && (s.Workers < 1 || s.Workers > MaxWorkers):
		return Result{}, fmt.Errorf("harness: workers %d must be from 1 to %d", s.Workers, MaxWorkers)
	}
	live, err := startAll(app, procs) // none under cgi
	if err != nil {
		return Result{}, err
	}
	defer func() {
		for _, p := range live { // each ends when its stdin closes, and must exit 0
			err = errors.Join(err, p.Close())
		}
	}()
	pids := map[int]bool{}
	for i := range s.Requests {
		allowed, pid, err := take(app, live, i)
		if err != nil {
			return r, err
		}
		pids[pid] = true
		if allowed {
			r.Allowed++
			continue
		}
		r.Refused++
		if r.FirstRefused == 0 {
			r.FirstRefused = i + 1
		}
	}
	r.Processes = len(pids)
	return r, nil
}

// take sends request i to the process whose turn it is in live, or under
// cgi (live is empty) to a new process that serves it alone and exits.
func take(app CheckedApp, live []*childproc.Proc, i int) (allowed bool, pid int, err error) {
	if len(live) > 0 {
		p := live[i%len(live)]
		allowed, err = hit(p)
		return allowed, p.Cmd.Process.Pid, err
	}
	p, err := startHits(app)
	if err != nil {
		return false, 0, err
	}
	defer p.Kill()
	if allowed, err = hit(p); err == nil {
		err = p.Close() // its one request served, the process ends
	}
	return allowed, p.Cmd.Process.Pid, err
}

// startAll starts n hits children of app, or none.
func startAll(app CheckedApp, n int) ([]*childproc.Proc, error) {
	var live []*childproc.Proc
	for range n {
		p, err := startHits(app)
		if err != nil {
			for _, p := range live {
				p.Kill()
			}
			return nil, err
		}
		live = append(live, p)
	}
	return live, nil
}

// startHits starts a hits child of app and waits for its ready line.
func startHits(app CheckedApp) (*childproc.Proc, error) {
	p, err := childproc.Start("hits", roleHits, app.env()...)
	if err != nil {
		return nil, fmt.Errorf("harness: start a hits child: %w", err)
	}
	if _, err := p.Expect(readyLine); err != nil {
		p.Kill()
		return nil, fmt.Errorf("harness: hits child did not start: %w", err)
	}
	return p, nil
}

// hit sends p one hit from Client and returns whether it was allowed.
func hit(p *childproc.Proc) (allowed bool, err error) {
	if err := p.Send(Client); err != nil {
		return false, err
	}
	rest, err := p.Expect(answerLine)
	if err != nil {
		return false, fmt.Errorf("harness: hits child pid %d: %w", p.Cmd.Process.Pid, err)
	}
	switch rest {
	case "allowed", "refused":
		return rest == "allowed", nil
	}
	return false, fmt.Errorf("harness: hits child pid %d answered %q", p.Cmd.Process.Pid, rest)
}

// hitsChild is one process of the endpoint: it makes its own store and
// limiter — a memory store made here lives and dies with this process —
// says it is ready, then takes a hit for each client address its parent
// sends, until its stdin closes.
func hitsChild() error {
	app, err := appFromEnv()
	if err != nil {
		return err
	}
	store, closer, err := OpenStore(app.App, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer closer.Close()
	l, err := ratelab.NewLimiter(store, app.CheckedRule())
	if err != nil {
		return err
	}
	fmt.Println(readyLine)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		now := app.Now
		if now.IsZero() {
			now = time.Now()
		}
		d, err := l.AllowAt(context.Background(), KeyPrefix+in.Text(), now)
		if err != nil {
			return err
		}
		fmt.Println(answerLine + map[bool]string{true: "allowed", false: "refused"}[d.Allowed])
	}
	return in.Err()
}
