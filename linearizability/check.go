package linearizability

import (
	"errors"
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// Verdict is what the checker found in a history.
type Verdict struct {
	Linearizable bool
	Ops          int // operations checked, Pending among them
	Pending      int
	Processes    int
	Took         time.Duration // the checker's time
	// Span is the time between the earliest and the latest instant the
	// hits gave their store (History.Span).
	Span time.Duration
	// Clients, if not nil, is what the clients saw that the history does
	// not record (History.Agree): the verdict is then not linearizable.
	Clients error
	// Requests is how many requests the clients sent (0 when they were
	// not recorded), Unanswered how many of them got neither 200 nor 429.
	Requests, Unanswered int
}

// String is the verdict line: it contains "linearizable" or "not
// linearizable", and the operation count; not the time, so that the same
// run prints the same line.
func (v Verdict) String() string {
	s := "linearizable"
	if !v.Linearizable {
		s = "not linearizable"
	}
	s += ": " + v.Counts()
	if v.Unanswered > 0 {
		s += fmt.Sprintf("; %d of %d requests unanswered", v.Unanswered, v.Requests)
	}
	if v.Clients != nil {
		s += "; " + v.Clients.Error()
	}
	return s
}

// Counts is what the verdict was reached on: the operations, the
// processes that made them, and those without an answer.
func (v Verdict) Counts() string {
	procs := "processes"
	if v.Processes == 1 {
		procs = "process"
	}
	return fmt.Sprintf("%d operations from %d %s (%d without an answer)", v.Ops, v.Processes, procs, v.Pending)
}

// ErrUndecided is returned when the checker could not decide in time.
var ErrUndecided = errors.New("linearizability: the checker could not decide in time")

// Check checks h. If html is not "", it writes porcupine's visualization
// there: every hit on a time line and, for a history that is not
// linearizable, the longest order that explains a prefix of it and the
// hits that cannot come next. timeout bounds the search (0: none).
func Check(h History, html string, timeout time.Duration) (Verdict, error) {
	if len(h.Ops) == 0 {
		return Verdict{}, errors.New("linearizability: the history is empty: no process recorded a hit")
	}
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, h.Ops, timeout)
	v := Verdict{Linearizable: res == porcupine.Ok, Ops: len(h.Ops), Pending: h.Pending, Processes: h.Processes,
		Took: time.Since(start), Span: h.Span()}
	if h.Requests != nil {
		if v.Clients = h.Agree(); v.Clients != nil {
			v.Linearizable = false
		}
		v.Requests, v.Unanswered = len(h.Requests), len(h.Requests)-count(h.Requests).OK-count(h.Requests).Throttled
	}
	if res == porcupine.Unknown {
		return v, fmt.Errorf("%w (%v, %d operations)", ErrUndecided, timeout, len(h.Ops))
	}
	if html != "" {
		if err := porcupine.VisualizePath(model, info, html); err != nil {
			return v, fmt.Errorf("linearizability: %w", err)
		}
	}
	return v, nil
}
