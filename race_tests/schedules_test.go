//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests_test

import (
	"testing"

	racetests "github.com/ratelab/ratelab/race_tests"
)

// TestSchedules runs every schedule of every case. The counts are exact:
// a schedule is an order of the two processes' system calls, the same on
// every machine, and each one is run, not sampled.
func TestSchedules(t *testing.T) {
	got, err := racetests.Schedules(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]int{ // explored, serial, lose
		"the store: two hits":                           {14, 2, 0},
		"the lock removed":                              {70, 2, 36},
		"truncate, then write, without the lock":        {252, 2, 200},
		"rename over the state file":                    {24, 2, 10},
		"a lock file unlinked after use, two processes": {740, 2, 0},
		"the store: a hit and a sweep":                  {19, 2, 0},
		"a sweep, the hit without its link-count check": {17, 2, 5},
		"the store: a hit and a reset":                  {18, 2, 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d cases, want %d", len(got), len(want))
	}
	for _, r := range got {
		if c := r.Claim(); !c.Pass() {
			t.Errorf("%s: observed %q, claimed %q", c.Case, c.Observed, c.Expected)
		}
		if g, w := [3]int{r.Explored, r.Serial, r.Lose}, want[r.Case.Name]; g != w {
			t.Errorf("%s: explored, serial, lose = %v, want %v", r.Case.Name, g, w)
		}
		if r.SerialLose > 0 {
			t.Errorf("%s: %d serial schedules lose: one process at a time cannot, the check of the outcome is wrong", r.Case.Name, r.SerialLose)
		}
	}
}
