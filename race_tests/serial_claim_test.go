//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import "testing"

// A serial schedule — one process's steps all before the other's — cannot
// lose a hit; if one did, the check of the outcome is wrong, and the
// command's row fails, not only a test.
func TestASerialScheduleThatLosesFailsTheRow(t *testing.T) {
	for _, c := range ScheduleCases() {
		r := ScheduleResult{Case: c, Explored: 10, Serial: 2, Lose: 1, SerialLose: 1} // a serial loss is a loss
		if c.Loses {
			r.Lose = 3
		}
		if got := r.Claim(); got.Pass() {
			t.Errorf("%s: a serial schedule lost, and the row says %q, %q: ok", c.Name, got.Observed, got.Detail)
		}
		r.SerialLose = 0
		if !c.Loses {
			r.Lose = 0
		}
		if got := r.Claim(); !got.Pass() {
			t.Errorf("%s: no serial schedule lost, and the row fails: %q", c.Name, got.Observed)
		}
	}
}
