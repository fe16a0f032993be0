//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Package stress releases many processes at once: each is this binary
// re-executed in a role, holds at a barrier until all are ready, counts its
// hits after one go-ahead, and reports a result line. The race
// demonstrations, the torture suite and the benchmark all run their
// processes through it; its own role hits the file store (Flock), for the
// benchmark and the race demonstration alike.
package stress

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/childproc"
)

// Group is a set of children started in one role, held at the barrier.
type Group struct {
	procs []*childproc.Proc
	start time.Time
}

// Start starts n children of role with env, and waits until each one has
// printed its ready line: then all of them hold at the barrier.
func Start(role string, n int, env ...string) (*Group, error) {
	g := &Group{}
	for i := range n {
		p, err := childproc.Start(fmt.Sprintf("%s #%d", role, i+1), role, env...)
		if err != nil {
			g.Kill()
			return nil, err
		}
		g.procs = append(g.procs, p)
	}
	for _, p := range g.procs {
		if _, err := p.Expect("ready"); err != nil {
			g.Kill()
			return nil, err
		}
	}
	return g, nil
}

// Run starts n children of role with env, releases them together and
// waits for them: Start, Go and Results in one, the children killed if
// anything fails.
func Run(role string, n int, env ...string) ([]string, time.Duration, error) {
	g, err := Start(role, n, env...)
	if err != nil {
		return nil, 0, err
	}
	defer g.Kill()
	if err := g.Go(); err != nil {
		return nil, 0, err
	}
	return g.Results()
}

// Go releases every child at once.
func (g *Group) Go() error {
	g.start = time.Now()
	for _, p := range g.procs {
		if err := p.Send("go"); err != nil {
			return err
		}
	}
	return nil
}

// Results waits for every child's result line and exit, and returns the
// lines (without "result ") and the time since Go.
func (g *Group) Results() ([]string, time.Duration, error) {
	var lines []string
	var errs []error
	for _, p := range g.procs {
		line, err := p.Expect("result ")
		if err == nil {
			err = p.Close()
		}
		errs = append(errs, err)
		lines = append(lines, line)
	}
	return lines, time.Since(g.start), errors.Join(errs...)
}

// Kill ends every child still running.
func (g *Group) Kill() {
	for _, p := range g.procs {
		p.Kill()
	}
}

// Quiet reports whether no child printed a line within d (each waited on
// in turn): a choreography's check that the children are still held, for
// example by a lock.
func (g *Group) Quiet(d time.Duration) bool {
	for _, p := range g.procs {
		if !p.Quiet(d) {
			return false
		}
	}
	return true
}

// Hit is the child's side of a Group: it says ready, holds at the barrier
// until the parent's go, takes hits hits with take, and reports them on
// its result line with the 99th percentile of a hit's time, in
// nanoseconds (see P99). It stops at take's first error. Between hits it
// beats a childproc.Pulse: on a busy machine 500 hits can take longer
// than the parent waits for a silent child.
func Hit(hits int, take func() error) error {
	childproc.Say("ready")
	childproc.WaitGo(bufio.NewReader(os.Stdin)) // the barrier: every hitter starts together
	took := make([]time.Duration, hits)
	var pulse childproc.Pulse
	for i := range hits {
		start := time.Now()
		if err := take(); err != nil {
			return err
		}
		took[i] = time.Since(start)
		pulse.Beat()
	}
	childproc.Say("result hits=%d p99=%d", hits, p99(took))
	return nil
}

// p99 is the 99th percentile of took (the nearest rank: 99 in a hundred
// are no longer), 0 when took is empty; it sorts took.
func p99(took []time.Duration) time.Duration {
	if len(took) == 0 {
		return 0
	}
	slices.Sort(took)
	return took[(len(took)*99+99)/100-1]
}

// P99 is the median of the 99th percentiles that Hit's result lines
// report: in a hundred of one hitter's hits, 99 took no longer; 0 when no
// line has one.
func P99(lines []string) time.Duration {
	var p99s []time.Duration
	for _, line := range lines {
		_, v, ok := strings.Cut(line, " p99=")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			p99s = append(p99s, time.Duration(n))
		}
	}
	if len(p99s) == 0 {
		return 0
	}
	slices.Sort(p99s)
	return p99s[len(p99s)/2]
}

// Counted is the error of a store's hit, or its Cause when the shared
// store did not decide it: a hitter whose hit was not counted must fail as
// loudly.
func Counted(d ratelab.Decision, err error) error {
	if err == nil && d.Source != ratelab.Shared {
		err = fmt.Errorf("hit decided %s: %w", d.Source, d.Cause)
	}
	return err
}
