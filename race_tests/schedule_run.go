//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ratelab/ratelab/algorithm"
)

// proc is what the explorer knows of a process during a schedule.
type proc struct {
	step, key string // the step it waits to take, and its key (see stepper)
	result    string // once done
	done      bool
}

// run runs one schedule: the choices in prefix, then always the first
// process that can go. It returns every choice made, the processes that
// could go at each, and whether no one-at-a-time order explains the
// outcome.
func (e *explorer) run(prefix []int) (choices []int, enabled [][]int, lost bool, err error) {
	if err := e.reset(); err != nil {
		return nil, nil, false, err
	}
	var ps [2]proc
	for i, p := range e.procs {
		if err := p.Send(e.c.Variant + " " + e.c.Ops[i]); err != nil {
			return nil, nil, false, err
		}
		if ps[i], err = e.read(i); err != nil {
			return nil, nil, false, err
		}
	}
	held := map[string]int{} // a locked file ("lock:INODE") → the process holding it
	for !ps[0].done || !ps[1].done {
		can := canGo(ps, held)
		if len(can) == 0 {
			return nil, nil, false, fmt.Errorf("both processes wait for a lock after %v", choices)
		}
		c := can[0]
		if len(choices) < len(prefix) {
			if c = prefix[len(choices)]; !slices.Contains(can, c) {
				return nil, nil, false, fmt.Errorf("schedule %v: process %d cannot go", prefix, c)
			}
		}
		choices, enabled = append(choices, c), append(enabled, can)
		taken := ps[c]
		if err := e.procs[c].Send("go"); err != nil {
			return nil, nil, false, err
		}
		if ps[c], err = e.read(c); err != nil {
			return nil, nil, false, fmt.Errorf("schedule %v: %w", choices, err)
		}
		if strings.HasPrefix(taken.key, "lock:") {
			held[taken.key] = c
		}
		if taken.key == "release" || ps[c].key == "restart" || ps[c].done {
			for k, h := range held {
				if h == c {
					delete(held, k)
				}
			}
		}
	}
	lost, err = e.lost(ps)
	return choices, enabled, lost, err
}

// canGo returns the processes whose next step can run now: not done, and
// not about to lock a file the other process holds (flock(2) would block).
func canGo(ps [2]proc, held map[string]int) []int {
	var can []int
	for i, p := range ps {
		if h, ok := held[p.key]; p.done || ok && h != i {
			continue
		}
		can = append(can, i)
	}
	return can
}

// read reads process i's next line: the step it waits to take, or its
// result.
func (e *explorer) read(i int) (proc, error) {
	line, err := e.procs[i].Expect("")
	if err != nil {
		return proc{}, err
	}
	if res, ok := strings.CutPrefix(line, "done "); ok {
		return proc{result: res, done: true}, nil
	}
	f := strings.Fields(strings.TrimPrefix(line, "next "))
	if len(f) != 2 {
		return proc{}, fmt.Errorf("unexpected line %q", line)
	}
	return proc{step: f[0], key: f[1]}, nil
}

// reset puts the case's starting state in place: count 5, in a live
// window or in one that is over.
func (e *explorer) reset() error {
	for _, p := range []string{e.path, e.path + ".lock", e.path + ".tmp"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.WriteFile(e.path, e.start().Append(nil), 0o600)
}

func (e *explorer) start() algorithm.Fixed {
	resetAt := demoNow().Unix() + int64(Window.Seconds())
	if e.c.Expired {
		resetAt = demoNow().Unix() - 1
	}
	return algorithm.Fixed{Count: 5, ResetAt: resetAt}
}
