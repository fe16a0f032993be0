package algorithm_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// aheadAt is when the far-ahead states are hit: 10 s into a clock-aligned
// minute.
var aheadAt = t0.Add(10 * time.Second)

// What Take must make of a state: replace it by a fresh one, or keep it
// (the hit allowed or refused on it, or a conflict, the state untouched).
const (
	replaced = "replaced"
	allowed  = "allowed"
	refused  = "refused"
	conflict = "conflict"
)

// aheadCase is a state of rule, hit at aheadAt, and what Take must make
// of it.
type aheadCase struct {
	name  string
	rule  ratelab.Rule
	state string
	want  string
}

func aheadCases() []aheadCase {
	t, ms := aheadAt.Unix(), aheadAt.UnixMilli()
	skew, maxWindow := int64(ratelab.MaxSkew/time.Second), int64(ratelab.MaxWindow/time.Second)
	years500 := int64(500 * 365 * 24 * 3600)
	min3 := ratelab.Rule{Name: "a", Limit: 3, Window: time.Minute}
	hour30 := ratelab.Rule{Name: "a", Limit: 30, Window: time.Hour}
	with := func(r ratelab.Rule, a ratelab.Algorithm) ratelab.Rule { r.Algorithm, r.Burst = a, r.Limit; return r }
	fixed := func(resetAt int64) string { return fmt.Sprintf(`{"count":1,"reset_at":%d}`, resetAt) }
	sliding := func(w, start int64) string {
		return fmt.Sprintf(`{"window":%d,"window_start":%d,"count":3,"prev_count":0}`, w, start)
	}
	logOf := func(w int64, ts ...int64) string {
		return string(algorithm.Log{Window: w, TS: ts}.Append(nil))
	}
	gcra := func(w, tat int64) string { return fmt.Sprintf(`{"window":%d,"tat":%d}`, w, tat) }
	ws := t - t%60
	return []aheadCase{
		{"fixed, 500 years ahead", hour30, fixed(t + years500), replaced},
		{"fixed, just past MaxWindow and MaxSkew", hour30, fixed(t + maxWindow + skew + 1), replaced},
		{"fixed, at MaxWindow and MaxSkew: another rule's", hour30, fixed(t + maxWindow + skew), conflict},
		{"fixed, 3h ahead under 1h: another rule's", hour30, fixed(t + 3*3600), conflict},
		{"fixed, one window and MaxSkew ahead", hour30, fixed(t + 3600 + skew), allowed},
		{"sliding, 500 years ahead", with(min3, ratelab.SlidingCounter), sliding(60, ws+years500), replaced},
		{"sliding, the window after MaxSkew's", with(min3, ratelab.SlidingCounter), sliding(60, ws+120), replaced},
		{"sliding, another window, 500 years ahead", with(min3, ratelab.SlidingCounter), sliding(3600, t-t%3600+years500), replaced},
		{"sliding, the window MaxSkew ahead", with(min3, ratelab.SlidingCounter), sliding(60, ws+60), refused},
		{"sliding, another window, MaxSkew ahead", with(min3, ratelab.SlidingCounter), sliding(1, t+skew), conflict},
		{"log, three instants 500 years ahead", with(min3, ratelab.SlidingLog), logOf(60, ms+years500*1000, ms+years500*1000+1, ms+years500*1000+2), replaced},
		{"log, one instant just past MaxSkew", with(min3, ratelab.SlidingLog), logOf(60, ms-5, ms+skew*1000+1), replaced},
		{"log, another window, past MaxSkew", with(min3, ratelab.SlidingLog), logOf(3600, ms+skew*1000+1), replaced},
		{"log, three instants MaxSkew ahead", with(min3, ratelab.SlidingLog), logOf(60, ms, ms+1, ms+skew*1000), refused},
		{"log, another window, MaxSkew ahead", with(min3, ratelab.SlidingLog), logOf(3600, ms+skew*1000), conflict},
		{"gcra, 500 years ahead", with(hour30, ratelab.GCRA), gcra(3600, ms+years500*1000), replaced},
		{"gcra, 100000 s ahead of an hour's", with(hour30, ratelab.GCRA), gcra(3600, ms+100000*1000), replaced},
		{"gcra, just past three windows and MaxSkew", with(hour30, ratelab.GCRA), gcra(3600, ms+(3*3600+skew)*1000+1), replaced},
		{"gcra, another window, past its bound", with(hour30, ratelab.GCRA), gcra(60, ms+(3*60+skew)*1000+1), replaced},
		{"gcra, three windows and MaxSkew ahead", with(hour30, ratelab.GCRA), gcra(3600, ms+(3*3600+skew)*1000), refused},
		{"gcra, another window, at its bound", with(hour30, ratelab.GCRA), gcra(60, ms+(3*60+skew)*1000), conflict},
	}
}

// A state recording an instant further ahead of the hit than any rule
// writes — a clock MaxSkew ahead included — is replaced by a fresh one,
// and the hit decided on it; one just inside the bound is kept, and one of
// another rule of the same name inside its bound is still a conflict.
func TestStateFurtherAheadThanAnyRuleWritesIsReplaced(t *testing.T) {
	for _, tt := range aheadCases() {
		t.Run(tt.name, func(t *testing.T) {
			got, err := algorithm.Take(nil, []byte(tt.state), tt.rule.Normalized(), aheadAt)
			fresh, ferr := algorithm.Take(nil, nil, tt.rule.Normalized(), aheadAt)
			if ferr != nil {
				t.Fatalf("Take on the absent state: %v", ferr)
			}
			switch tt.want {
			case replaced:
				if err != nil || got.Replaced == nil {
					t.Fatalf("got err %v, Replaced %v; want the state replaced", err, got.Replaced)
				}
				if got.Decision != fresh.Decision || !bytes.Equal(got.State, fresh.State) {
					t.Errorf("got %+v, state %s; want the fresh state's %+v, state %s", got.Decision, got.State, fresh.Decision, fresh.State)
				}
			case conflict:
				if !errors.Is(err, ratelab.ErrRuleConflict) {
					t.Errorf("got err %v, Replaced %v; want a rule conflict", err, got.Replaced)
				}
			default:
				if err != nil || got.Replaced != nil {
					t.Fatalf("got err %v, Replaced %v; want the state kept", err, got.Replaced)
				}
				if got.Decision.Allowed != (tt.want == allowed) {
					t.Errorf("got %+v, want %s", got.Decision, tt.want)
				}
			}
		})
	}
}

// The furthest ahead states a rule writes — a fixed window of MaxWindow, a
// sliding window just begun, a log's instant now, and a GCRA arrival time
// pushed by a full burst of the finest rule and counted refusals — are
// kept when hit by a host whose clock is MaxSkew behind the writer's.
func TestFurthestStatesAreKept(t *testing.T) {
	finest := ratelab.Rule{Name: "f", Limit: 999, Burst: 999, Window: time.Second, Algorithm: ratelab.GCRA, Refusals: ratelab.CountRefusals}
	tests := []struct {
		name          string
		writer, later ratelab.Rule
		hits          int
		want          string
	}{
		{"fixed, the longest window", ratelab.Rule{Name: "f", Limit: 1, Window: ratelab.MaxWindow}, ratelab.Rule{Name: "f", Limit: 1, Window: time.Hour}, 1, conflict},
		{"sliding", ratelab.Rule{Name: "f", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingCounter}, ratelab.Rule{Name: "f", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingCounter}, 1, allowed},
		{"log", ratelab.Rule{Name: "f", Limit: 1, Window: time.Minute, Algorithm: ratelab.SlidingLog}, ratelab.Rule{Name: "f", Limit: 1, Window: time.Minute, Algorithm: ratelab.SlidingLog}, 1, refused},
		{"gcra, the finest rule hammered", finest, finest, 3000, refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var state []byte
			for range tt.hits {
				res, err := algorithm.Take(nil, state, tt.writer.Normalized(), t0)
				if err != nil {
					t.Fatal(err)
				}
				if res.State != nil {
					state = res.State
				}
			}
			got, err := algorithm.Take(nil, state, tt.later.Normalized(), t0.Add(-ratelab.MaxSkew))
			switch {
			case tt.want == conflict:
				if !errors.Is(err, ratelab.ErrRuleConflict) {
					t.Errorf("state %s: got err %v, Replaced %v; want a conflict", state, err, got.Replaced)
				}
			case err != nil || got.Replaced != nil:
				t.Errorf("state %s: got err %v, Replaced %v; want it kept", state, err, got.Replaced)
			case got.Decision.Allowed != (tt.want == allowed):
				t.Errorf("state %s: got %+v, want %s", state, got.Decision, tt.want)
			}
		})
	}
}
