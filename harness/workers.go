package harness

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/ratelab/ratelab/internal/childproc"
)

// The workers of the long-lived models: started by re-executing the binary,
// ready when they print their ready line, stopped when their stdin closes.

// stopWorkers stops ws, at once, and sums their tallies.
func stopWorkers(ws []*worker) (sum Tally, err error) {
	var mu sync.Mutex
	var g errgroup.Group
	for _, w := range ws {
		g.Go(func() error {
			t, err := w.stop()
			mu.Lock()
			sum.Served, sum.Allowed, sum.Throttled = sum.Served+t.Served, sum.Allowed+t.Allowed, sum.Throttled+t.Throttled
			mu.Unlock()
			return err
		})
	}
	return sum, g.Wait()
}

// startTwoHosts starts cfg.Workers workers for each of two hosts, each
// host with its own state directory, and interleaves them so that the
// round-robin front alternates between the hosts.
func startTwoHosts(cfg Config) ([]*worker, error) {
	var hosts [2][]*worker
	for i := range hosts {
		c := cfg
		if c.App.Store == "file" {
			c.App.Dir = filepath.Join(cfg.App.Dir, fmt.Sprintf("host-%c", 'a'+i))
			if err := os.MkdirAll(c.App.Dir, 0o700); err != nil {
				return nil, err
			}
		}
		ws, err := startWorkers(c, cfg.Workers)
		if err != nil {
			for _, w := range hosts[0] {
				w.stop()
			}
			return nil, err
		}
		hosts[i] = ws
	}
	var all []*worker
	for k := range cfg.Workers {
		all = append(all, hosts[0][k], hosts[1][k])
	}
	return all, nil
}

// worker is one long-lived child process.
type worker struct {
	proc  *childproc.Proc
	url   *url.URL
	token string // the worker's own front token
	cfg   Config // what started it, and starts its replacement
	dead  atomic.Bool
}

func (w *worker) pid() int { return w.proc.Cmd.Process.Pid }

// startWorkers re-executes the binary n times as HTTP workers, at most
// four starting at once, and waits for each one's ready line.
func startWorkers(cfg Config, n int) ([]*worker, error) {
	ws := make([]*worker, n)
	var g errgroup.Group
	g.SetLimit(4)
	for i := range ws {
		g.Go(func() error {
			w, err := startWorker(cfg)
			ws[i] = w
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, w := range ws {
			if w != nil {
				w.stop()
			}
		}
		return nil, err
	}
	return ws, nil
}

// startWorker starts one worker, with a front token of its own.
func startWorker(cfg Config) (*worker, error) {
	token, err := newFrontToken()
	if err != nil {
		return nil, err
	}
	app := cfg.App
	app.FrontToken = token
	p, err := childproc.StartExe("worker", cfg.Exe, roleServer, cfg.Stderr, app.env()...)
	if err != nil {
		return nil, fmt.Errorf("harness: start worker %s: %w", cfg.Exe, err)
	}
	rest, err := p.Expect(readyPrefix)
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("harness: worker pid %d did not start: %w", p.Cmd.Process.Pid, err)
	}
	var addr string
	var pid int
	if _, err := fmt.Sscanf(rest, "addr=%s pid=%d", &addr, &pid); err != nil {
		p.Kill()
		return nil, fmt.Errorf("harness: worker's ready line %q: %w", rest, err)
	}
	return &worker{proc: p, url: &url.URL{Scheme: "http", Host: addr}, token: token, cfg: cfg}, nil
}

// stop closes the worker's stdin, which tells it to finish, reads its
// result line and waits for it to exit. It returns what the worker says it
// served, allowed and throttled.
func (w *worker) stop() (Tally, error) {
	pid := w.proc.Cmd.Process.Pid
	rest, err := w.proc.Finish(resultPrefix)
	if err != nil {
		return Tally{}, fmt.Errorf("harness: worker pid %d gave no result: %w", pid, err)
	}
	var p int
	var t Tally
	if _, err := fmt.Sscanf(rest, "pid=%d served=%d allowed=%d throttled=%d", &p, &t.Served, &t.Allowed, &t.Throttled); err != nil {
		return Tally{}, fmt.Errorf("harness: worker pid %d result line %q: %w", pid, rest, err)
	}
	return t, nil
}
