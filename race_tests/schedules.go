//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ratelab/ratelab/internal/childproc"
)

// ScheduleCase is one row of the schedule exploration: two processes each
// taking one operation of a variant (see protocols), every interleaving of
// their system calls run for real.
type ScheduleCase struct {
	Name, Variant string
	Ops           [2]string // the operation of process A and of process B
	Expired       bool      // the state's window is over before they start
	Loses         bool      // the claim: some schedule loses a hit
}

// ScheduleCases are the rows of ratelab schedules.
func ScheduleCases() []ScheduleCase {
	return []ScheduleCase{
		{"the store: two hits", "store", [2]string{"hit", "hit"}, false, false},
		{"the lock removed", "no-lock", [2]string{"hit", "hit"}, false, true},
		{"truncate, then write, without the lock", "truncate-first", [2]string{"hit", "hit"}, false, true},
		{"rename over the state file", "rename", [2]string{"hit", "hit"}, false, true},
		{"a lock file unlinked after use, two processes", "lock-file-unlinked", [2]string{"hit", "hit"}, false, false},
		{"the store: a hit and a sweep", "store-sweep", [2]string{"hit", "sweep"}, true, false},
		{"a sweep, the hit without its link-count check", "sweep-unchecked", [2]string{"hit", "sweep"}, true, true},
		{"the store: a hit and a reset", "store-reset", [2]string{"hit", "reset"}, false, false},
	}
}

// ScheduleResult is what exploring one case found: how many schedules the
// kernel allows, how many of those ran all of one process first, and in
// how many no one-at-a-time order of the two operations explains what
// they were told and what the file holds after (a hit lost, a torn read).
type ScheduleResult struct {
	Case                   ScheduleCase
	Explored, Serial, Lose int
	SerialLose             int // serial schedules that lose: the check itself is wrong if any
}

// Claim is the result as a row of the table; a serial schedule that lost
// fails it, whatever the claim.
func (r ScheduleResult) Claim() Result {
	claim := func(loses bool) string {
		if loses {
			return "some schedules lose a hit"
		}
		return "no schedule loses a hit"
	}
	c := result(r.Case.Name, claim(r.Case.Loses), claim(r.Lose > 0))
	c.Detail = fmt.Sprintf("%d of %d schedules (%d serial)", r.Lose, r.Explored, r.Serial)
	if r.SerialLose > 0 { // one process at a time cannot lose: the check of the outcome is wrong
		c.Observed = fmt.Sprintf("%d serial schedules lose a hit", r.SerialLose)
	}
	return c
}

// Schedules explores every case with two child processes that take their
// operations one system call at a time, in a state directory under dir.
func Schedules(dir string) ([]ScheduleResult, error) {
	path := filepath.Join(dir, "state.json")
	var e explorer
	for i, name := range []string{"A", "B"} {
		p, err := child(name, roleStepper, path)
		if err != nil {
			return nil, err
		}
		defer p.Close()
		e.procs[i] = p
	}
	e.path = path
	var out []ScheduleResult
	for _, c := range ScheduleCases() {
		e.c = c
		r := ScheduleResult{Case: c}
		if err := e.explore(nil, &r); err != nil {
			return nil, fmt.Errorf("racetests: schedules of %s: %w", c.Name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// An explorer runs schedules of one case: a schedule is the order in
// which the two processes' steps are granted.
type explorer struct {
	procs [2]*childproc.Proc
	path  string
	c     ScheduleCase
}

// explore runs the schedule that follows prefix and then always grants
// the first process that can go, then every schedule that branches off it
// after prefix: each schedule exactly once (a depth-first walk of the tree
// of choices, each leaf run from the start).
func (e *explorer) explore(prefix []int, r *ScheduleResult) error {
	choices, enabled, lost, err := e.run(prefix)
	if err != nil {
		return err
	}
	r.Explored++
	if lost {
		r.Lose++
	}
	if serial(choices) {
		r.Serial++
		if lost {
			r.SerialLose++
		}
	}
	for i := len(choices) - 1; i >= len(prefix); i-- {
		for _, alt := range enabled[i][1:] {
			if err := e.explore(append(slices.Clone(choices[:i]), alt), r); err != nil {
				return err
			}
		}
	}
	return nil
}

// serial reports whether choices ran one process's steps all before the
// other's.
func serial(choices []int) bool {
	switch1 := 0
	for i := 1; i < len(choices); i++ {
		if choices[i] != choices[i-1] {
			switch1++
		}
	}
	return switch1 <= 1
}
