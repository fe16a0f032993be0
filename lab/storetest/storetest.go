// Package storetest holds the behaviour every ratelab.Store must show, so
// that each store's tests run the same checks against it, and the same
// table of instants holds every store to the same decisions.
package storetest

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// T0 is the fixed instant the checks start from, a whole hour.
var T0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

// Key is the client part of the original's key; under rule "demo-start"
// its state key is the original's "demo-start:ip:203.0.113.7".
const Key = "ip:203.0.113.7"

// Original is the original's rule: 30 starts per hour, fixed window.
var Original = Checked(ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour})

// Backing makes a fresh place for states (a directory, a Redis database)
// and returns a constructor of store instances on it: instances of a
// persistent store share their states, as processes would; instances of
// the in-memory store share nothing.
type Backing func(t *testing.T) (newInstance func() ratelab.Store)

// Take takes one hit and fails the test on an error or a hit not counted.
func Take(t *testing.T, s ratelab.Store, r ratelab.Rule, key string, at time.Time) ratelab.Decision {
	t.Helper()
	d, err := s.TakeAt(context.Background(), r, key, at)
	require.NoError(t, err)
	require.Equal(t, ratelab.Shared, d.Source, "the store failed open: %v", d.Cause)
	return d
}

// Rules are one rule per algorithm, 3 per minute, GCRA with a burst of 2:
// the rules of the decision tables.
func Rules() []ratelab.Rule {
	var rs []ratelab.Rule
	for _, a := range ratelab.Algorithms() {
		r := Checked(ratelab.Rule{Name: "t-" + string(a), Limit: 3, Window: time.Minute, Algorithm: a})
		if a == ratelab.GCRA {
			r.Burst = 2
		}
		rs = append(rs, r)
	}
	return rs
}

// Run runs every check on the stores backing makes; persistent says
// whether its instances share states, as a file or Redis store's do.
func Run(t *testing.T, backing Backing, persistent bool) {
	t.Run("decision tables", func(t *testing.T) { Tables(t, backing) })
	t.Run("same decisions as the reference", func(t *testing.T) {
		s := backing(t)()
		want := Reference(t, Script())
		got := Replay(t, s, Script())
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("hit %d (%v): got %+v, want %+v (the pure step's)", i, Script()[i], got[i], want[i])
			}
		}
	})
	t.Run("a late hit never frees a throttled key", func(t *testing.T) { LateHit(t, backing) })
	t.Run("rules on one key never share state", func(t *testing.T) { RulesApart(t, backing) })
	t.Run("a rule sharing a name is a conflict", func(t *testing.T) { Conflict(t, backing, persistent) })
	t.Run("bad rules and instants are errors", func(t *testing.T) { BadInput(t, backing) })
	t.Run("reset forgets one key of one rule", func(t *testing.T) { Reset(t, backing) })
	t.Run("refused hits counted or not", func(t *testing.T) { Hammering(t, backing) })
}

// Hammering sends one hit every 10 s for two hours to a rule of 30 an hour
// (GCRA with no burst), with refused hits counted and not, and returns how
// many were allowed: with counted refusals hammering is self-defeating
// under every algorithm but the fixed window, whose window ends on time
// whatever it counted; with ignored ones the client gets its 30 an hour.
func Hammering(t *testing.T, backing Backing) {
	for _, a := range ratelab.Algorithms() {
		t.Run(string(a), func(t *testing.T) {
			var allowed [2]int
			for i, refusals := range []ratelab.Refusals{ratelab.CountRefusals, ratelab.IgnoreRefusals} {
				s := backing(t)()
				r := Checked(ratelab.Rule{Name: "hammered", Limit: 30, Window: time.Hour, Algorithm: a, Refusals: refusals})
				for at := time.Duration(0); at < 2*time.Hour; at += 10 * time.Second {
					if Take(t, s, r, Key, T0.Add(at)).Allowed {
						allowed[i]++
					}
				}
			}
			counted, ignored := allowed[0], allowed[1]
			t.Logf("%s: %d allowed with refusals counted, %d with refusals ignored", a, counted, ignored)
			assert.GreaterOrEqual(t, ignored, 59, "ignored refusals: about 30 an hour")
			assert.LessOrEqual(t, ignored, 61, "ignored refusals: about 30 an hour")
			if a == ratelab.FixedWindow {
				assert.Equal(t, ignored, counted, "the fixed window ends on time whatever it counted")
			} else {
				assert.LessOrEqual(t, counted, 31, "counted refusals: hammering keeps the client out after its first 30")
			}
		})
	}
}

// Reset throttles a key under each algorithm, then resets it: the key
// starts over with its full allowance, while another key of the same rule
// and the same key under another rule keep their state.
func Reset(t *testing.T, backing Backing) {
	for _, r := range Rules() {
		t.Run(string(r.Algorithm), func(t *testing.T) {
			s := backing(t)()
			rs, ok := Raw(s).(ratelab.Resetter)
			require.True(t, ok, "%T is not a ratelab.Resetter", s)
			other := Checked(ratelab.Rule{Name: "other", Limit: 3, Window: time.Minute})
			at := T0.Add(30 * time.Second)
			for range 10 {
				Take(t, s, r, Key, at)
			}
			Take(t, s, r, "ip:198.51.100.9", at)
			Take(t, s, other, Key, at)
			require.False(t, Take(t, s, r, Key, at).Allowed)
			require.NoError(t, rs.Reset(context.Background(), r, Key))
			require.NoError(t, rs.Reset(context.Background(), r, "ip:192.0.2.1"), "a key with no state")
			d := Take(t, s, r, Key, at)
			assert.True(t, d.Allowed, "after the reset")
			fresh := Take(t, backing(t)(), r, Key, at)
			assert.Equal(t, fresh.Remaining, d.Remaining, "a reset key starts as a fresh one")
			assert.Less(t, Take(t, s, r, "ip:198.51.100.9", at).Remaining, fresh.Remaining, "another key keeps its state")
			assert.Equal(t, int64(1), Take(t, s, other, Key, at).Remaining, "another rule keeps its state")
		})
	}
}

// LateHit throttles a key at T under each algorithm, then hits at T − 1s
// and at T again: both must be refused. A state never moves backwards.
func LateHit(t *testing.T, backing Backing) {
	for _, r := range Rules() {
		t.Run(string(r.Algorithm), func(t *testing.T) {
			s := backing(t)()
			at := T0.Add(30 * time.Second)
			for i := 0; ; i++ {
				require.Less(t, i, 100, "never throttled")
				if !Take(t, s, r, Key, at).Allowed {
					break
				}
			}
			late := Take(t, s, r, Key, at.Add(-time.Second))
			assert.False(t, late.Allowed, "a hit 1s late was allowed: %+v", late)
			again := Take(t, s, r, Key, at)
			assert.False(t, again.Allowed, "after the late hit, a hit at T was allowed: %+v", again)
		})
	}
}

// RulesApart is the finding that made rules carry names: five hits of
// 30/h, one hit of 5/min on the same key two minutes later, then the next
// 30/h hit must be decided exactly as on a store that never saw the
// per-minute hit — under the fixed window, its sixth.
func RulesApart(t *testing.T, backing Backing) {
	for _, a := range ratelab.Algorithms() {
		t.Run(string(a), func(t *testing.T) {
			hourly := Checked(ratelab.Rule{Name: "hourly", Limit: 30, Window: time.Hour, Algorithm: a, Burst: 30})
			minute := Checked(ratelab.Rule{Name: "minute", Limit: 5, Window: time.Minute})
			var got [2]ratelab.Decision
			for i, withMinute := range []bool{true, false} {
				s := backing(t)()
				for i := range 5 {
					Take(t, s, hourly, Key, T0.Add(time.Duration(i)*time.Second))
				}
				if withMinute {
					Take(t, s, minute, Key, T0.Add(2*time.Minute))
				}
				got[i] = Take(t, s, hourly, Key, T0.Add(2*time.Minute))
			}
			assert.Equal(t, got[1], got[0], "the hourly rule after a per-minute hit on its key (got) and without one (want)")
			if a == ratelab.FixedWindow {
				assert.Equal(t, int64(24), got[0].Remaining, "the sixth hit of 30")
			}
		})
	}
}

// Conflict takes hits of a rule, then of another rule with the same name
// and algorithm but another window, in the same instance and in a fresh
// one: each must be refused as ErrRuleConflict, and the first rule's state
// must go on as if nothing happened.
func Conflict(t *testing.T, backing Backing, persistent bool) {
	for _, r := range Rules() {
		t.Run(string(r.Algorithm), func(t *testing.T) {
			newInstance := backing(t)
			s := newInstance()
			long := r
			long.Window = time.Hour
			first := Take(t, s, long, Key, T0)
			_, err := s.TakeAt(context.Background(), r, Key, T0.Add(time.Second))
			assert.ErrorIs(t, err, ratelab.ErrRuleConflict, "same instance")
			if err != nil {
				assert.Contains(t, err.Error(), `"t-`+string(r.Algorithm)+`"`, "the error names the rule")
			}
			_, err = newInstance().TakeAt(context.Background(), r, Key, T0.Add(time.Second))
			if persistent {
				var conflict *ratelab.ConflictError
				assert.True(t, errors.As(err, &conflict), "another instance, as another process: got %v, want a *ratelab.ConflictError", err)
			} else {
				assert.NoError(t, err, "a fresh in-memory instance has no state to conflict with")
			}
			next := Take(t, s, long, Key, T0.Add(2*time.Second))
			assert.Equal(t, first.Remaining-1, next.Remaining, "the first rule's state was touched")
		})
	}
}

// BadInput checks that invalid rules and instants are errors, never
// hits: a Limiter on s checks each rule once, when it is made, and each
// instant before the store sees it.
func BadInput(t *testing.T, backing Backing) {
	s := backing(t)()
	bad := []ratelab.Rule{
		{},
		{Name: "x", Limit: 1, Window: 0},
		{Name: "x", Limit: 1, Window: 1500 * time.Millisecond},
		{Name: "x", Limit: 1, Window: ratelab.MaxWindow + time.Second},
		{Name: "x", Limit: 0, Window: time.Hour},
		{Name: "x:y", Limit: 1, Window: time.Hour},
		{Name: "x", Limit: 1, Window: time.Hour, Algorithm: "leaky"},
		{Name: "x", Limit: ratelab.MaxLogLimit + 1, Window: time.Hour, Algorithm: ratelab.SlidingLog},
		{Name: "x", Limit: 2, Window: time.Hour, Algorithm: ratelab.GCRA, Burst: 3},
	}
	for _, r := range bad {
		_, err := ratelab.NewLimiter(s, r)
		assert.Error(t, err, "rule %+v", r)
	}
	l, err := ratelab.NewLimiter(s, Original)
	require.NoError(t, err)
	for _, at := range []time.Time{time.Unix(-1, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, err := l.AllowAt(context.Background(), Key, at)
		assert.Error(t, err, "instant %v", at)
	}
}

// CrossInstance hits one key once from each of two store instances, as two
// processes would, and returns the remaining allowance the second instance
// reports under the original's rule: 28 for a store whose state outlives
// the instance, 29 for one that keeps it in memory. It is the original's
// test_state_survives_across_instances.
func CrossInstance(t *testing.T, newInstance func(t *testing.T) ratelab.Store) int64 {
	t.Helper()
	Take(t, newInstance(t), Original, Key, T0)
	return Take(t, newInstance(t), Original, Key, T0.Add(30*time.Second)).Remaining
}

// Stub is a store that answers every hit with D and Err, for tests of a
// store's consumers, and records the context it was given in Ctx, if set.
type Stub struct {
	D   ratelab.Decision
	Err error
	Ctx *context.Context
}

// TakeAt answers with the stub's decision, naming r as its rule.
func (s Stub) TakeAt(ctx context.Context, r ratelab.Rule, _ string, _ time.Time) (ratelab.Decision, error) {
	if s.Ctx != nil {
		*s.Ctx = ctx
	}
	s.D.Rule = r
	return s.D, s.Err
}

// Checked is r checked (ratelab.Rule.Check), as a Limiter passes it to a
// store, which trusts it; it panics if r is invalid.
func Checked(r ratelab.Rule) ratelab.Rule {
	c, err := r.Check()
	if err != nil {
		panic(err)
	}
	return c
}

// WithPolicy puts s behind policy (ratelab.WithFailPolicy), deciding
// fail-local in a bounded in-memory store and logging to log, as an
// application wires a store.
func WithPolicy(s ratelab.Store, policy ratelab.FailPolicy, log *slog.Logger) ratelab.Store {
	safe, err := ratelab.WithFailPolicy(s, policy, &brokeninmemory.Store{MaxKeys: brokeninmemory.FallbackKeys}, log)
	if err != nil {
		panic(err)
	}
	return safe
}
