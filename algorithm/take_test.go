package algorithm_test

import (
	"math"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

var t0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

// fullLog is a log of n instants one millisecond apart, the last at t0.
func fullLog(n int) algorithm.Log {
	s := algorithm.Log{Window: 3600}
	for i := range n {
		s.TS = append(s.TS, t0.UnixMilli()-int64(n-1-i))
	}
	return s
}

// A log filled under a higher limit, up to MaxLogLimit, is a valid state
// under a lowered one: Take decodes it and trims it to the new limit, as
// the Redis script does, instead of replacing it as corrupt and letting a
// fresh log through.
func TestLoweredLogLimitTrimsTheLog(t *testing.T) {
	tests := []struct {
		name       string
		instants   int
		limit      int64
		refusals   ratelab.Refusals
		wantState  int // instants in the state written back; -1 for none written
		wantRetry  time.Duration
		wantWindow int64
	}{
		{"40 under 5", 40, 5, ratelab.IgnoreRefusals, -1, time.Hour - 3*time.Millisecond, 3600},
		{"MaxLogLimit under 1", ratelab.MaxLogLimit, 1, ratelab.IgnoreRefusals, -1, time.Hour + time.Millisecond, 3600},
		{"40 under 5, refusals counted", 40, 5, ratelab.CountRefusals, 5, time.Hour - 2*time.Millisecond, 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ratelab.Rule{Name: "lowered", Limit: tt.limit, Window: time.Hour, Algorithm: ratelab.SlidingLog, Refusals: tt.refusals}
			res, err := algorithm.Take(nil, fullLog(tt.instants).Append(nil), r, t0)
			if err != nil {
				t.Fatalf("Take: %v", err)
			}
			if res.Replaced != nil {
				t.Fatalf("Replaced = %v, want nil: the log is valid", res.Replaced)
			}
			if res.Decision.Allowed || res.Decision.RetryAfter != tt.wantRetry {
				t.Errorf("decision %+v, want refused with RetryAfter %v", res.Decision, tt.wantRetry)
			}
			got := -1
			if res.State != nil {
				st, err := algorithm.DecodeLog(res.State)
				if err != nil || st.Window != tt.wantWindow {
					t.Fatalf("state %q decodes to %+v, %v", res.State, st, err)
				}
				got = len(st.TS)
			}
			if got != tt.wantState {
				t.Errorf("state written back holds %d instants, want %d", got, tt.wantState)
			}
		})
	}
}

// MaxStateSize bounds every valid state of the rule's algorithm, whatever
// the rule's own limit: a log at MaxLogLimit fits a rule of limit 1.
func TestMaxStateSizeBoundsEveryRuleOfTheAlgorithm(t *testing.T) {
	r := ratelab.Rule{Name: "m", Limit: 1, Window: 366 * 24 * time.Hour, Algorithm: ratelab.SlidingLog}
	s := algorithm.Log{Window: int64(r.Window / time.Second)}
	for i := range ratelab.MaxLogLimit {
		s.TS = append(s.TS, 32503679999999-int64(ratelab.MaxLogLimit-i)) // the longest instants there are
	}
	if got, want := len(s.Append(nil)), algorithm.MaxStateSize(r); got > want {
		t.Errorf("a log at MaxLogLimit is %d bytes, more than MaxStateSize %d", got, want)
	}
}

// A state's count of the largest int64, under a rule that does not count
// refusals, was decided as count+1: an overflow into a negative count, and
// the hit allowed. It is refused.
func TestHugeCountIsRefusedNotOverflowed(t *testing.T) {
	r := ratelab.Rule{Name: "r", Limit: 5, Window: time.Hour, Refusals: ratelab.IgnoreRefusals}
	now := time.Unix(1_780_000_000, 0)
	old := algorithm.Fixed{Count: math.MaxInt64, ResetAt: now.Unix() + 60}.Append(nil)
	res, err := algorithm.Take(nil, old, r.Normalized(), now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision.Allowed || res.Decision.Remaining != 0 {
		t.Errorf("count MaxInt64: allowed %v, remaining %d; want refused, 0", res.Decision.Allowed, res.Decision.Remaining)
	}
}
