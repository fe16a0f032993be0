package windowboundary

import (
	"context"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
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

// Limited is an Algorithm that is a real store deciding a real rule,
// checked (ratelab.Rule.Check) as a store takes it: the
// measurements below are of the code applications run, not of a copy. The
// in-memory store is used in one process, where it is correct; the file
// and Redis stores are measured across processes by package report's
// CrossProcessBurst.
type Limited struct {
	Rule  ratelab.Rule
	Store ratelab.Store
	err   error
}

// New returns the rule of algorithm alg, limit per window (burst for
// GCRA), on a fresh in-memory store.
func New(alg ratelab.Algorithm, limit int, window time.Duration, burst int) *Limited {
	r := ratelab.Rule{Name: "boundary", Limit: int64(limit), Window: window, Algorithm: alg}
	if alg == ratelab.GCRA {
		r.Burst = int64(burst)
	}
	return &Limited{Rule: r.Normalized(), Store: new(brokeninmemory.Store)}
}

var names = map[ratelab.Algorithm][2]string{
	ratelab.FixedWindow:    {"fixed window", "2 × limit"},
	ratelab.SlidingLog:     {"sliding log", "limit"},
	ratelab.SlidingCounter: {"sliding counter", "approximate: below 2 × limit"},
	ratelab.GCRA:           {"GCRA / token bucket", "limit + burst"},
}

// Name names the algorithm as the chapter does.
func (a *Limited) Name() string { return names[a.Rule.Algorithm][0] }

// Bound says how many it may accept in one window-long span.
func (a *Limited) Bound() string { return names[a.Rule.Algorithm][1] }

// AllowAt takes one hit at t. A store error counts as a refusal and is
// kept for Err.
func (a *Limited) AllowAt(t time.Time) bool {
	d, err := a.Store.TakeAt(context.Background(), a.Rule, "user:alice", t)
	if err != nil {
		if a.err == nil {
			a.err = err
		}
		return false
	}
	return d.Allowed
}

// Err returns the first store error AllowAt met.
func (a *Limited) Err() error { return a.err }

// All returns one of each algorithm for limit per window, in the
// chapter's order; GCRA gets burst.
func All(limit int, window time.Duration, burst int) []Algorithm {
	var out []Algorithm
	for _, alg := range []ratelab.Algorithm{ratelab.FixedWindow, ratelab.SlidingLog, ratelab.SlidingCounter, ratelab.GCRA} {
		out = append(out, New(alg, limit, window, burst))
	}
	return out
}
