package windowboundary

import (
	"time"

	"github.com/ratelab/ratelab"
)

// Algorithm decides, one request at a time, whether to accept it. Each
// keeps the state of one key; time is always a parameter.
type Algorithm interface {
	Name() string
	// Bound describes the most the algorithm accepts in any window-long
	// span, in words.
	Bound() string
	AllowAt(t time.Time) bool
}

// Fixed is this repository's fixed window (ratelab.State.Next): a window
// opens at a key's first hit. It counts every request, as the stores do.
type Fixed struct {
	Limit  int64
	Window time.Duration
	st     ratelab.State
}

func (a *Fixed) Name() string  { return "fixed window" }
func (a *Fixed) Bound() string { return "2 × limit" }

// !+fixed
func (a *Fixed) AllowAt(t time.Time) bool {
	a.st, _ = a.st.Next(t, a.Window)
	return a.st.Count <= a.Limit
}

// !-fixed

// SlidingLog keeps the time of every accepted request and accepts one more
// while fewer than Limit were accepted in the window-long span ending now,
// both ends included. It is exact, and its state grows with the limit.
type SlidingLog struct {
	Limit    int
	Window   time.Duration
	accepted []time.Time
}

func (a *SlidingLog) Name() string  { return "sliding log" }
func (a *SlidingLog) Bound() string { return "limit" }

// !+log
func (a *SlidingLog) AllowAt(t time.Time) bool {
	from := t.Add(-a.Window)
	i := 0
	for i < len(a.accepted) && a.accepted[i].Before(from) {
		i++
	}
	a.accepted = a.accepted[i:] // forget what left the window
	if len(a.accepted) >= a.Limit {
		return false
	}
	a.accepted = append(a.accepted, t)
	return true
}

// !-log

// Counter is the sliding-window counter (ratelab.SlidingState): two counts
// and a window start, the previous count weighted by its overlap with the
// last window length. It counts every request, as the file store does.
type Counter struct {
	Limit  int64
	Window time.Duration
	st     ratelab.SlidingState
}

func (a *Counter) Name() string  { return "sliding counter" }
func (a *Counter) Bound() string { return "approximate: below 2 × limit" }

// !+counter
func (a *Counter) AllowAt(t time.Time) bool {
	a.st = a.st.Next(t, a.Window)
	return a.st.Hit(t, a.Window).Count <= a.Limit
}

// !-counter

// GCRA is the generic cell rate algorithm, a token bucket kept as one
// timestamp: requests are due one every Window/Limit, and up to Burst may
// come early. It accepts at most Limit + Burst in any window-long span,
// both ends included.
type GCRA struct {
	Limit  int
	Window time.Duration
	Burst  int
	tat    time.Time // theoretical arrival time of the next request
}

func (a *GCRA) Name() string  { return "GCRA / token bucket" }
func (a *GCRA) Bound() string { return "limit + burst" }

// !+gcra
func (a *GCRA) AllowAt(t time.Time) bool {
	interval := a.Window / time.Duration(a.Limit)
	tolerance := time.Duration(a.Burst-1) * interval
	if a.tat.Sub(t) > tolerance {
		return false // too early, even with the burst allowance
	}
	a.tat = later(a.tat, t).Add(interval)
	return true
}

// !-gcra

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// All returns one of each algorithm for limit per window; GCRA gets burst.
func All(limit int, window time.Duration, burst int) []Algorithm {
	return []Algorithm{
		&Fixed{Limit: int64(limit), Window: window},
		&SlidingLog{Limit: limit, Window: window},
		&Counter{Limit: int64(limit), Window: window},
		&GCRA{Limit: limit, Window: window, Burst: burst},
	}
}
