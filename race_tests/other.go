//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package racetests

import (
	"errors"
	"io"

	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/linearizability"
)

// Roles is empty where flock(2) is not available.
func Roles() childproc.Roles { return nil }

// Report is empty where flock(2) is not available.
type Report struct{}

// Pass is false: nothing was shown.
func (Report) Pass() bool { return false }

// Print prints nothing.
func (Report) Print(io.Writer, bool) {}

// Demo needs flock(2) semantics (Linux, macOS or a BSD).
func Demo(string, int, int, io.Writer) (Report, error) {
	return Report{}, errors.New("racetests: the demonstrations need flock(2) semantics (Linux, macOS or a BSD)")
}

// Figure is a sequence diagram; there are none where flock(2) is not
// available.
type Figure struct{}

// Figures needs flock(2) semantics (Linux, macOS or a BSD).
func Figures(string) ([]Figure, error) {
	return nil, errors.New("racetests: the demonstrations need flock(2) semantics (Linux, macOS or a BSD)")
}

// WriteFigures writes nothing.
func WriteFigures([]Figure, string) error { return nil }

// ScheduleResult is empty where flock(2) is not available.
type ScheduleResult struct{}

// Claim is empty.
func (ScheduleResult) Claim() claim.Claim { return claim.Claim{} }

// Schedules needs flock(2) semantics (Linux, macOS or a BSD).
func Schedules(string) ([]ScheduleResult, error) {
	return nil, errors.New("racetests: the schedules need flock(2) semantics (Linux, macOS or a BSD)")
}

// RecordCounter needs flock(2) semantics (Linux, macOS or a BSD).
func RecordCounter(string, bool, int, int) (linearizability.History, error) {
	return linearizability.History{}, errors.New("racetests: the counter needs flock(2) semantics (Linux, macOS or a BSD)")
}
