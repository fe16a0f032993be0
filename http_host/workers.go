package httphost

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ratelab/ratelab/harness"
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
		if c.App.Store == harness.File {
			c.App.Dir = filepath.Join(cfg.App.Dir, fmt.Sprintf("host-%c", 'a'+i))
			if err := os.MkdirAll(c.App.Dir, 0o700); err != nil {
				return nil, err
			}
		}
		ws, err := startWorkers(c, cfg.Workers)
		if err != nil {
			for _, w := range hosts[0] {
				w.stop()
				w.seat.close()
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

// seat is a place in the pool: the listening socket the front made for
// it, which every worker in the seat serves in turn and the front keeps
// open, so that the port never comes free for another process to take
// while a dead worker is replaced (connections made meanwhile wait in
// its backlog for the next); the token the front vouches with there,
// known to no other seat; and what starts a worker.
type seat struct {
	ln    *net.TCPListener
	file  *os.File // ln's descriptor, for the workers
	url   *url.URL
	token string
	cfg   Config
}

// newSeat makes a seat for a worker started with cfg.
func newSeat(cfg Config) (*seat, error) {
	token, err := newFrontToken()
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("httphost: listen for a worker: %w", err)
	}
	f, err := ln.File()
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("httphost: listen for a worker: %w", err)
	}
	return &seat{ln: ln, file: f, url: &url.URL{Scheme: "http", Host: ln.Addr().String()}, token: token, cfg: cfg}, nil
}

// drain closes every connection waiting in the seat's backlog: requests
// sent to a worker that hung or whose seat stays empty, which the front
// has answered 502 or is to. Left there, the next worker would take
// them and count hits whose clients were told they failed.
func (s *seat) drain() {
	// A deadline already past would end Accept before it looks: those
	// connections are queued already, and come at once.
	s.ln.SetDeadline(time.Now().Add(20 * time.Millisecond))
	defer s.ln.SetDeadline(time.Time{})
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		c.Close()
	}
}

// close closes the seat's socket; its port is free again.
func (s *seat) close() { s.file.Close(); s.ln.Close() }

// worker is one long-lived child process, in its seat.
type worker struct {
	proc *childproc.Proc
	seat *seat
	// exited is set once the worker's watcher saw it exit, and reaps it;
	// vacated, once no worker will take its seat after it; hung, once
	// the front killed it for leaving a request unanswered.
	exited, vacated, hung atomic.Bool
}

func (w *worker) pid() int { return w.proc.Cmd.Process.Pid }

// startWorkers re-executes the binary n times as HTTP workers, each in a
// seat of its own, at most four starting at once, and waits for each
// one's ready line.
func startWorkers(cfg Config, n int) ([]*worker, error) {
	ws := make([]*worker, n)
	var g errgroup.Group
	g.SetLimit(4)
	for i := range ws {
		g.Go(func() error {
			s, err := newSeat(cfg)
			if err != nil {
				return err
			}
			if ws[i], err = startWorker(s); err != nil {
				s.close()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		for _, w := range ws {
			if w != nil {
				w.stop()
				w.seat.close()
			}
		}
		return nil, err
	}
	return ws, nil
}

// startWorker starts a worker in seat s: it serves the seat's socket,
// which it finds at descriptor 3, and believes the seat's token.
func startWorker(s *seat) (*worker, error) {
	cfg := s.cfg
	p, err := childproc.StartExeFiles("worker", cfg.Exe, roleServer, cfg.Stderr, []*os.File{s.file}, append(cfg.settings(s.token).env(), listenFD+"=3")...)
	nerr := setNonblock(s.ln) // exec left the socket blocking; the front's drain accepts on it
	if err != nil {
		return nil, fmt.Errorf("httphost: start worker %s: %w", cfg.Exe, err)
	}
	if nerr != nil {
		p.Kill()
		return nil, fmt.Errorf("httphost: the seat at %s: %w", s.url.Host, nerr)
	}
	rest, err := p.Expect(readyPrefix)
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("httphost: worker pid %d did not start: %w", p.Cmd.Process.Pid, err)
	}
	var addr string
	var pid int
	if _, err := fmt.Sscanf(rest, "addr=%s pid=%d", &addr, &pid); err != nil || addr != s.url.Host {
		p.Kill()
		return nil, fmt.Errorf("httphost: worker's ready line %q, in the seat at %s: %v", rest, s.url.Host, err)
	}
	return &worker{proc: p, seat: s}, nil
}

// stop closes the worker's stdin, which tells it to finish, reads its
// result line and waits for it to exit. It returns what the worker says it
// served, allowed and throttled.
func (w *worker) stop() (Tally, error) {
	pid := w.proc.Cmd.Process.Pid
	rest, err := w.proc.Finish(resultPrefix)
	if err != nil {
		return Tally{}, fmt.Errorf("httphost: worker pid %d gave no result: %w", pid, err)
	}
	var p int
	var t Tally
	if _, err := fmt.Sscanf(rest, "pid=%d served=%d allowed=%d throttled=%d", &p, &t.Served, &t.Allowed, &t.Throttled); err != nil {
		return Tally{}, fmt.Errorf("httphost: worker pid %d result line %q: %w", pid, rest, err)
	}
	return t, nil
}
