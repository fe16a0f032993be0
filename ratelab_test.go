package ratelab_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/lab/storetest"
)

var t0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

var original = storetest.Checked(ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour})

func TestRuleValidate(t *testing.T) {
	tests := []struct {
		rule ratelab.Rule
		want string // "" for valid
	}{
		{original, ""},
		{ratelab.Rule{Name: "a.b_c-9", Limit: 1, Window: time.Second}, ""},
		{ratelab.Rule{Name: "x", Limit: ratelab.MaxLimit, Window: ratelab.MaxWindow}, ""},
		{ratelab.Rule{Name: "x", Limit: 5, Window: time.Minute, Algorithm: ratelab.GCRA, Burst: 5}, ""},
		{ratelab.Rule{Limit: 1, Window: time.Hour}, "must be 1 to 64 characters"},
		{ratelab.Rule{Name: "demo:start", Limit: 1, Window: time.Hour}, "only letters, digits"},
		{ratelab.Rule{Name: "x", Limit: 1, Window: time.Hour, Algorithm: "leaky"}, "unknown algorithm"},
		{ratelab.Rule{Name: "x", Limit: 1, Window: 0}, "whole number of seconds from 1s"},
		{ratelab.Rule{Name: "x", Limit: 1, Window: 1500 * time.Millisecond}, "whole number of seconds"},
		{ratelab.Rule{Name: "x", Limit: 1, Window: ratelab.MaxWindow + time.Second}, "whole number of seconds"},
		{ratelab.Rule{Name: "x", Limit: 0, Window: time.Hour}, "limit 0 must be from 1"},
		{ratelab.Rule{Name: "x", Limit: ratelab.MaxLimit + 1, Window: time.Hour}, "must be from 1"},
		{ratelab.Rule{Name: "x", Limit: ratelab.MaxLogLimit + 1, Window: time.Hour, Algorithm: ratelab.SlidingLog}, "must be from 1 to 1000"},
		{ratelab.Rule{Name: "x", Limit: 5, Window: time.Hour, Burst: -1}, "burst -1"},
		{ratelab.Rule{Name: "x", Limit: 5, Window: time.Hour, Algorithm: ratelab.GCRA, Burst: 6}, "burst 6"},
		{ratelab.Rule{Name: "x", Limit: 2000, Window: time.Second, Algorithm: ratelab.GCRA}, "at least 1ms apart"},
	}
	for _, tt := range tests {
		err := tt.rule.Validate()
		if tt.want == "" {
			assert.NoError(t, err, "%+v", tt.rule)
		} else {
			assert.ErrorContains(t, err, tt.want, "%+v", tt.rule)
		}
	}
}

func TestRuleNormalizedAndString(t *testing.T) {
	r := ratelab.Rule{Name: "api", Limit: 10, Window: time.Minute, Algorithm: ratelab.GCRA}
	assert.Equal(t, int64(1), r.Normalized().Burst, "GCRA's burst 0 means 1")
	assert.Equal(t, `"api" 10 per 1m0s (gcra, burst 1)`, r.String())
	assert.Equal(t, ratelab.FixedWindow, original.Normalized().Algorithm)
	assert.Equal(t, "demo-start:ip:203.0.113.7", original.StateKey("ip:203.0.113.7"), "the original's key")
}

func TestCheckInstant(t *testing.T) {
	for _, at := range []time.Time{time.Unix(0, 0), t0, time.Date(2999, 12, 31, 23, 59, 59, 0, time.UTC)} {
		assert.NoError(t, ratelab.CheckInstant(at), "%v", at)
	}
	for _, at := range []time.Time{time.Unix(-1, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), {}} {
		assert.Error(t, ratelab.CheckInstant(at), "%v", at)
	}
}

func TestNewLimiterRejectsBadInput(t *testing.T) {
	store := new(brokeninmemory.Store)
	tests := []struct {
		name  string
		store ratelab.Store
		rules []ratelab.Rule
		want  string
	}{
		{"nil store", nil, []ratelab.Rule{original}, "needs a store"},
		{"no rules", store, nil, "at least one rule"},
		{"bad rule", store, []ratelab.Rule{{Name: "x"}}, "must be"},
		{"two rules, one name", store, []ratelab.Rule{original, {Name: "demo-start", Limit: 5, Window: time.Minute}}, `two rules named "demo-start"`},
	}
	for _, tt := range tests {
		_, err := ratelab.NewLimiter(tt.store, tt.rules...)
		assert.ErrorContains(t, err, tt.want, tt.name)
	}
}

func TestLimiterThrottlesFromLimitPlusOne(t *testing.T) {
	l, err := ratelab.NewLimiter(new(brokeninmemory.Store), original)
	require.NoError(t, err)
	for i := 1; i <= 31; i++ {
		d, err := l.AllowAt(context.Background(), "ip:203.0.113.7", t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, err)
		assert.Equal(t, i <= 30, d.Allowed, "hit %d", i)
		assert.Equal(t, max(0, int64(30-i)), d.Remaining, "hit %d", i)
		if i == 31 {
			assert.Equal(t, time.Hour-30*time.Second, d.RetryAfter, "until the window opened at +1s ends")
		}
	}
}

// Compound rules: every rule takes every hit and the most restrictive
// decision wins; a hit refused by one rule still counts in the others.
func TestCompoundRules(t *testing.T) {
	minute := ratelab.Rule{Name: "per-minute", Limit: 3, Window: time.Minute}
	hour := ratelab.Rule{Name: "per-hour", Limit: 5, Window: time.Hour}
	l, err := ratelab.NewLimiter(new(brokeninmemory.Store), minute, hour)
	require.NoError(t, err)
	take := func(at time.Duration) ratelab.Decision {
		d, err := l.AllowAt(context.Background(), "k", t0.Add(at))
		require.NoError(t, err)
		return d
	}
	tests := []struct {
		at        time.Duration
		allowed   bool
		binding   string
		remaining int64
	}{
		{0, true, "per-minute", 2},
		{time.Second, true, "per-minute", 1},
		{2 * time.Second, true, "per-minute", 0}, // per-hour has 2 left: the minute binds
		{3 * time.Second, false, "per-minute", 0},
		{time.Minute, true, "per-hour", 0}, // the refused hit counted in the hour: 5 of 5
		{time.Minute + time.Second, false, "per-hour", 0},
	}
	for _, tt := range tests {
		d := take(tt.at)
		got := struct {
			allowed   bool
			binding   string
			remaining int64
		}{d.Allowed, d.Rule.Name, d.Remaining}
		assert.Equal(t, struct {
			allowed   bool
			binding   string
			remaining int64
		}{tt.allowed, tt.binding, tt.remaining}, got, "hit at +%v", tt.at)
	}
}

func TestLimiterPassesFailOpenAndErrorsThrough(t *testing.T) {
	cause := errors.New("disk gone")
	l, err := ratelab.NewLimiter(storetest.Stub{D: ratelab.Decision{Allowed: true, Source: ratelab.Uncounted, Cause: cause}}, original)
	require.NoError(t, err)
	d, err := l.Allow(context.Background(), "k")
	require.NoError(t, err)
	assert.Equal(t, ratelab.Uncounted, d.Source)
	assert.ErrorIs(t, d.Cause, cause)
	assert.True(t, d.Allowed)

	l, err = ratelab.NewLimiter(storetest.Stub{Err: fmt.Errorf("x: %w", ratelab.ErrUnavailable)}, original)
	require.NoError(t, err)
	_, err = l.Allow(context.Background(), "k")
	assert.ErrorIs(t, err, ratelab.ErrUnavailable)
}

// guarded is a store that cannot reach its state (err), behind policy p.
func guarded(t *testing.T, p ratelab.FailPolicy, err error, log *slog.Logger) ratelab.Store {
	t.Helper()
	s, werr := ratelab.WithFailPolicy(storetest.Stub{Err: err}, p, &brokeninmemory.Store{}, log)
	require.NoError(t, werr)
	return s
}

func TestFailPolicy(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ratelab.FailPolicy
	}{{"open", ratelab.FailOpen}, {"closed", ratelab.FailClosed}, {"local", ratelab.FailLocal}} {
		got, err := ratelab.ParseFailPolicy(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "ParseFailPolicy(%q)", tt.in)
		assert.Equal(t, tt.in, got.String())
	}
	_, err := ratelab.ParseFailPolicy("maybe")
	assert.ErrorContains(t, err, "use open, closed or local")
	_, err = ratelab.WithFailPolicy(new(brokeninmemory.Store), ratelab.FailLocal, nil, nil)
	assert.ErrorContains(t, err, "needs an in-process store")
	_, err = ratelab.WithFailPolicy(new(brokeninmemory.Store), ratelab.FailPolicy(7), nil, nil)
	assert.ErrorContains(t, err, "unknown fail policy")

	now, gone := time.Unix(1_780_000_000, 0), fmt.Errorf("x: %w: gone", ratelab.ErrUnavailable)
	ctx, quiet := context.Background(), newDiscardLogger()
	d, err := guarded(t, ratelab.FailOpen, gone, quiet).TakeAt(ctx, original, "k", now)
	require.NoError(t, err)
	// No state is made up for it: it said 29 remaining, as a fresh window's first hit.
	assert.Equal(t, ratelab.Decision{Rule: original, Allowed: true, Source: ratelab.Uncounted, Cause: gone}, d)
	_, err = guarded(t, ratelab.FailClosed, gone, quiet).TakeAt(ctx, original, "k", now)
	assert.ErrorIs(t, err, ratelab.ErrUnavailable)

	// Fail-local counts in this process: the 31st hit of one key is refused,
	// another key has its own count.
	local := guarded(t, ratelab.FailLocal, gone, quiet)
	for i := 1; i <= 31; i++ {
		d, err := local.TakeAt(ctx, original, "k", now)
		require.NoError(t, err)
		assert.Equal(t, i <= 30, d.Allowed, "hit %d", i)
		assert.Equal(t, ratelab.Local, d.Source, "hit %d: counted, in the process", i)
		assert.ErrorIs(t, d.Cause, gone, "hit %d", i)
	}
	d, err = local.TakeAt(ctx, original, "other", now)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, time.Hour, d.RetryAfter+d.ResetAfter)

	// Load is not an outage: a busy store's hit is refused under fail-open
	// as under fail-closed, and decided in the process under fail-local.
	// So is a process out of file descriptors, whichever store it was
	// using: the store says only that it could not reach its state.
	busy := fmt.Errorf("x: %w: lock wait out of time", ratelab.ErrBusy)
	emfile := fmt.Errorf("x: %w: %w", ratelab.ErrUnavailable, &os.PathError{Op: "open", Path: "f", Err: syscall.EMFILE})
	for _, cause := range []error{busy, emfile} {
		for _, p := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
			d, err := guarded(t, p, cause, quiet).TakeAt(ctx, original, "k", now)
			assert.ErrorIs(t, err, ratelab.ErrBusy, "policy %v, %v", p, cause)
			assert.ErrorIs(t, err, cause, "policy %v: the cause kept", p)
			assert.False(t, d.Allowed, "policy %v, %v", p, cause)
		}
		d, err = guarded(t, ratelab.FailLocal, cause, quiet).TakeAt(ctx, original, "k", now)
		require.NoError(t, err)
		assert.Equal(t, ratelab.Local, d.Source, "%v", cause)
	}

	// Errors that are not about reaching the state pass under every policy.
	conflict := fmt.Errorf("x: %w", ratelab.ErrRuleConflict)
	for _, p := range ratelab.FailPolicies() {
		_, err := guarded(t, p, conflict, quiet).TakeAt(ctx, original, "k", now)
		assert.ErrorIs(t, err, ratelab.ErrRuleConflict, "policy %v", p)
	}

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, p := range ratelab.FailPolicies() {
		_, err := guarded(t, p, gone, quiet).TakeAt(ended, original, "k", now)
		assert.ErrorIs(t, err, context.Canceled, "policy %v: the caller gave up", p)
	}
}

// maybeCountedError is a cause whose request went out and whose answer
// was lost, as a store says it (a method MaybeCounted).
type maybeCountedError struct{ error }

func (maybeCountedError) MaybeCounted() bool { return true }

// Fail-open logs a hit the store could not reach as not counted, and one
// whose answer was lost — its cause says MaybeCounted — as counted or not.
func TestFailOpenSaysWhetherTheHitMayHaveBeenCounted(t *testing.T) {
	for _, tt := range []struct {
		cause     error
		want, not string
	}{
		{fmt.Errorf("x: %w: connection refused", ratelab.ErrUnavailable), "hit not counted (fail-open)", "counted or not"},
		{fmt.Errorf("x: %w: %w", ratelab.ErrUnavailable, maybeCountedError{errors.New("EOF")}), "hit let through, counted or not (fail-open)", "not counted"},
	} {
		var logged bytes.Buffer
		d, err := guarded(t, ratelab.FailOpen, tt.cause, slog.New(slog.NewTextHandler(&logged, nil))).
			TakeAt(context.Background(), original, "k", time.Unix(1_780_000_000, 0))
		require.NoError(t, err)
		assert.Equal(t, ratelab.Uncounted, d.Source)
		assert.Contains(t, logged.String(), tt.want)
		assert.NotContains(t, logged.String(), tt.not)
	}
}

// decidedError is the error of a hit the store counted but could not
// confirm, carrying its decision (a method Decided).
type decidedError struct{ d ratelab.Decision }

func (e decidedError) Error() string             { return "counted, not confirmed" }
func (e decidedError) Unwrap() error             { return ratelab.ErrUnavailable }
func (e decidedError) Decided() ratelab.Decision { return e.d }

// A hit the store counted and could not confirm is refused under
// fail-closed, and its decision returned under fail-open and fail-local.
func TestAnUnconfirmedHitIsDecidedOnItsCount(t *testing.T) {
	want := ratelab.Decision{Rule: original, Allowed: false, RetryAfter: time.Minute, ResetAfter: time.Minute}
	for _, p := range ratelab.FailPolicies() {
		d, err := guarded(t, p, decidedError{want}, newDiscardLogger()).TakeAt(context.Background(), original, "k", time.Unix(1_780_000_000, 0))
		if p == ratelab.FailClosed {
			assert.ErrorIs(t, err, ratelab.ErrUnavailable)
			continue
		}
		require.NoError(t, err, "policy %v", p)
		assert.Equal(t, want, d, "policy %v", p)
	}
}

func TestCeilSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{-time.Second: 0, 0: 0, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, time.Hour: 3600} {
		assert.Equal(t, want, ratelab.CeilSeconds(d), "%v", d)
	}
}

func TestConflictErrorNamesBothRules(t *testing.T) {
	err := error(&ratelab.ConflictError{Rule: original, Other: `"demo-start" 5 per 1m0s (fixed)`})
	assert.ErrorIs(t, err, ratelab.ErrRuleConflict)
	assert.Contains(t, err.Error(), `rule "demo-start" 30 per 1h0m0s (fixed)`)
	assert.Contains(t, err.Error(), `"demo-start" 5 per 1m0s (fixed)`)
}

func TestKeyDigest(t *testing.T) {
	// sha256("demo-start:ip:203.0.113.7"), as PHP's hash('sha256', $key) gives it.
	assert.Equal(t, "fa404fc5fdf396553b0d7703ad73ccb8c5ee2ca7e6ba94f5399c5d635e85a1e8", ratelab.KeyDigest("demo-start:ip:203.0.113.7"))
	assert.Len(t, ratelab.KeyDigest("../../etc/passwd"), 64)
}

func newDiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// An outage is logged once every LogEvery for each way the policy decides,
// not once per hit: a client sending fast during one made a line per
// request, as much disk as it pleased. Each line after the first says how
// many like it were held back. The hits' own instants are the clock.
func TestAnOutageIsLoggedOnceEveryInterval(t *testing.T) {
	gone := fmt.Errorf("x: %w: gone", ratelab.ErrUnavailable)
	for _, p := range ratelab.FailPolicies() {
		var logged bytes.Buffer
		s := guarded(t, p, gone, slog.New(slog.NewTextHandler(&logged, nil)))
		step := ratelab.LogEvery / 10
		for i := range 21 { // at 0, LogEvery and 2 × LogEvery a line is due
			s.TakeAt(context.Background(), original, "k", t0.Add(time.Duration(i)*step))
		}
		lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
		if assert.Len(t, lines, 3, "policy %v:\n%s", p, logged.String()) {
			assert.NotContains(t, lines[0], "held_back", "policy %v: the first line", p)
			assert.Contains(t, lines[1], "held_back=9", "policy %v", p)
			assert.Contains(t, lines[2], "held_back=9", "policy %v", p)
		}
	}
}
