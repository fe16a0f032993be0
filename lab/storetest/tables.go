package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// row is one hit of a decision table and the decision it must get.
type row struct {
	at                    time.Duration // after T0
	allowed               bool
	remaining             int64
	retryAfter, resetAfer time.Duration
}

const ms = time.Millisecond

// tables are worked by hand from each algorithm's rule (see package
// algorithm), 3 per minute, GCRA with a burst of 2. Rows marked "late"
// come stamped before an earlier row's instant.
var tables = map[ratelab.Algorithm][]row{
	ratelab.FixedWindow: {
		{0, true, 2, 0, 60 * time.Second},
		{1 * time.Second, true, 1, 0, 59 * time.Second},
		{2 * time.Second, true, 0, 0, 58 * time.Second},
		{10 * time.Second, false, 0, 50 * time.Second, 50 * time.Second},
		{9 * time.Second, false, 0, 51 * time.Second, 51 * time.Second}, // late
		{60 * time.Second, true, 2, 0, 60 * time.Second},                // a new window
		{59 * time.Second, true, 1, 0, 61 * time.Second},                // late: counts in the new window
	},
	ratelab.SlidingCounter: {
		{0, true, 2, 0, 120 * time.Second},
		{30 * time.Second, true, 1, 0, 90 * time.Second},
		{40 * time.Second, true, 0, 0, 80 * time.Second},
		{50 * time.Second, false, 0, 40 * time.Second, 70 * time.Second},  // 4 in this window: wait until 4×(1−e)+1 ≤ 3
		{70 * time.Second, false, 0, 35 * time.Second, 110 * time.Second}, // ceil(4×50/60 + 1) = 5
		{59 * time.Second, false, 0, 61 * time.Second, 121 * time.Second}, // late: counts in the current window, unweighted
	},
	ratelab.SlidingLog: {
		{0, true, 2, 0, 60*time.Second + ms},
		{10 * time.Second, true, 1, 0, 60*time.Second + ms},
		{20 * time.Second, true, 0, 0, 60*time.Second + ms},
		{30 * time.Second, false, 0, 30*time.Second + ms, 50*time.Second + ms},
		{60 * time.Second, false, 0, ms, 20*time.Second + ms}, // both ends included: T0 still in
		{60*time.Second + ms, true, 0, 0, 60*time.Second + ms},
		{59 * time.Second, false, 0, 11*time.Second + ms, 61*time.Second + 2*ms}, // late: taken at the latest instant
	},
	ratelab.GCRA: {
		{0, true, 1, 0, 20 * time.Second},
		{1 * time.Second, true, 0, 0, 39 * time.Second},
		{2 * time.Second, false, 0, 18 * time.Second, 38 * time.Second},
		{1500 * ms, false, 0, 18500 * ms, 38500 * ms}, // late
		{20 * time.Second, true, 0, 0, 40 * time.Second},
		{100 * time.Second, true, 1, 0, 20 * time.Second},
	},
}

// Tables runs each algorithm's decision table on a fresh store.
func Tables(t *testing.T, backing Backing) {
	for _, r := range Rules() {
		t.Run(string(r.Algorithm), func(t *testing.T) {
			s := backing(t)()
			for i, w := range tables[r.Algorithm] {
				d := Take(t, s, r, Key, T0.Add(w.at))
				got := row{w.at, d.Allowed, d.Remaining, d.RetryAfter, d.ResetAfter}
				if got != w {
					t.Errorf("row %d at +%v: got %+v, want %+v", i, w.at, got, w)
				}
				if d.Rule != r.Normalized() {
					t.Errorf("row %d: decision names rule %v, want %v", i, d.Rule, r)
				}
			}
		})
	}
}

// Hit is one hit of a script.
type Hit struct {
	Rule ratelab.Rule
	Key  string
	At   time.Time
}

// String shows the hit as a failure message names it.
func (h Hit) String() string {
	return fmt.Sprintf("%s %s at +%v", h.Rule.Name, h.Key, h.At.Sub(T0))
}

// Script is a seeded sequence of hits under every algorithm, with refused
// hits counted and not: two keys, a few windows, instants with
// milliseconds, bursts, quiet spells and hits stamped up to 3 s late.
func Script() []Hit {
	rng := rand.New(rand.NewPCG(7, 11))
	var hits []Hit
	var rules []ratelab.Rule
	for _, r := range Rules() {
		flipped := r
		flipped.Name += "-flipped"
		flipped.Refusals = ratelab.CountRefusals
		if r.Normalized().Refusals == ratelab.CountRefusals {
			flipped.Refusals = ratelab.IgnoreRefusals
		}
		rules = append(rules, r, flipped)
	}
	for _, r := range rules {
		at := T0.Add(123 * ms)
		for range 150 {
			switch p := rng.IntN(10); {
			case p < 5:
				at = at.Add(time.Duration(rng.IntN(3000)) * ms)
			case p < 7:
				at = at.Add(time.Duration(rng.IntN(40)) * time.Second)
			}
			stamp := at
			if rng.IntN(8) == 0 {
				stamp = at.Add(-time.Duration(rng.IntN(3000)) * ms)
			}
			key := Key
			if rng.IntN(4) == 0 {
				key = "ip:198.51.100.9"
			}
			hits = append(hits, Hit{r, key, stamp})
		}
	}
	return hits
}

// Reference decides a script with package algorithm's steps over a map:
// the decisions every store must give.
func Reference(t *testing.T, hits []Hit) []ratelab.Decision {
	states := map[string][]byte{}
	var out []ratelab.Decision
	for _, h := range hits {
		id := h.Rule.StateKey(h.Key) + algorithm.Suffix(h.Rule.Normalized().Algorithm)
		res, err := algorithm.Take(nil, states[id], h.Rule.Normalized(), h.At)
		require.NoError(t, err, "%v", h)
		if res.State != nil {
			states[id] = res.State
		}
		out = append(out, res.Decision)
	}
	return out
}

// Replay takes every hit of a script from s, in order.
func Replay(t *testing.T, s ratelab.Store, hits []Hit) []ratelab.Decision {
	var out []ratelab.Decision
	for _, h := range hits {
		d, err := s.TakeAt(context.Background(), h.Rule, h.Key, h.At)
		require.NoError(t, err, "%v", h)
		out = append(out, d)
	}
	return out
}
