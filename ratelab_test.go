package ratelab_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

var t0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

func TestStateNext(t *testing.T) {
	const w = time.Hour
	now := t0.Unix()
	tests := []struct {
		name        string
		prev        ratelab.State
		at          time.Time
		want        ratelab.State
		wantClamped bool
	}{
		{"absent starts a window", ratelab.State{}, t0, ratelab.State{Count: 1, ResetAt: now + 3600}, false},
		{"live window counts on", ratelab.State{Count: 4, ResetAt: now + 10}, t0, ratelab.State{Count: 5, ResetAt: now + 10}, false},
		{"reset_at equal to now is over", ratelab.State{Count: 30, ResetAt: now}, t0, ratelab.State{Count: 1, ResetAt: now + 3600}, false},
		{"expired window restarts", ratelab.State{Count: 30, ResetAt: now - 1}, t0, ratelab.State{Count: 1, ResetAt: now + 3600}, false},
		{"sub-second now uses whole seconds", ratelab.State{Count: 2, ResetAt: now + 1}, t0.Add(999 * time.Millisecond), ratelab.State{Count: 3, ResetAt: now + 1}, false},
		{"exactly one window ahead is legal", ratelab.State{Count: 7, ResetAt: now + 3600}, t0, ratelab.State{Count: 8, ResetAt: now + 3600}, false},
		{"more than one window ahead is clamped, count kept", ratelab.State{Count: 7, ResetAt: now + 3601}, t0, ratelab.State{Count: 8, ResetAt: now + 3600}, true},
		{"far future is clamped", ratelab.State{Count: 2, ResetAt: 1 << 40}, t0, ratelab.State{Count: 3, ResetAt: now + 3600}, true},
		{"hostile count saturates", ratelab.State{Count: 1 << 62, ResetAt: now + 5}, t0, ratelab.State{Count: 1 << 62, ResetAt: now + 5}, false},
		{"negative count restarts at one", ratelab.State{Count: -9, ResetAt: now + 5}, t0, ratelab.State{Count: 1, ResetAt: now + 5}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, clamped := tt.prev.Next(tt.at, w)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantClamped, clamped, "clamped")
		})
	}
}

func TestCheckWindow(t *testing.T) {
	for _, w := range []time.Duration{0, -time.Second, 500 * time.Millisecond, 1500 * time.Millisecond} {
		assert.Error(t, ratelab.CheckWindow(w), "window %v", w)
	}
	for _, w := range []time.Duration{time.Second, time.Hour} {
		assert.NoError(t, ratelab.CheckWindow(w), "window %v", w)
	}
}

func TestParseFailPolicy(t *testing.T) {
	p, err := ratelab.ParseFailPolicy("closed")
	require.NoError(t, err)
	assert.Equal(t, ratelab.FailClosed, p)
	p, err = ratelab.ParseFailPolicy("open")
	require.NoError(t, err)
	assert.Equal(t, ratelab.FailOpen, p)
	assert.Equal(t, "open", ratelab.FailPolicy(0).String(), "zero value")
	_, err = ratelab.ParseFailPolicy("sometimes")
	assert.ErrorContains(t, err, "use open or closed")
}

// mapStore is the smallest correct Store, for testing the consumer alone.
type mapStore struct {
	m   map[string]ratelab.State
	err error
}

func (s *mapStore) HitAt(key string, w time.Duration, now time.Time) (ratelab.Hit, error) {
	if s.err != nil {
		return ratelab.Hit{}, s.err
	}
	if s.m == nil {
		s.m = map[string]ratelab.State{}
	}
	s.m[key], _ = s.m[key].Next(now, w)
	return s.m[key].Hit(), nil
}

func TestNewLimiterRejectsBadInput(t *testing.T) {
	tests := []struct {
		name   string
		store  ratelab.Store
		limit  int
		window time.Duration
		want   string
	}{
		{"nil store", nil, 30, time.Hour, "needs a store"},
		{"zero limit", &mapStore{}, 0, time.Hour, "limit 0 must be positive"},
		{"negative limit", &mapStore{}, -1, time.Hour, "limit -1 must be positive"},
		{"zero window", &mapStore{}, 30, 0, "whole number of seconds"},
		{"fractional window", &mapStore{}, 30, 1500 * time.Millisecond, "whole number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ratelab.NewLimiter(tt.store, tt.limit, tt.window)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestLimiterThrottlesFromLimitPlusOne(t *testing.T) {
	l, err := ratelab.NewLimiter(&mapStore{}, 30, time.Hour)
	require.NoError(t, err)
	for i := 1; i <= 31; i++ {
		now := t0.Add(time.Duration(i) * time.Minute)
		d, err := l.AllowAt("demo-start:ip:203.0.113.7", now)
		require.NoError(t, err)
		assert.Equal(t, int64(i), d.Count, "hit %d count", i)
		assert.Equal(t, i <= 30, d.Allowed, "hit %d allowed", i)
		assert.Equal(t, int64(max(0, 30-i)), d.Remaining, "hit %d remaining", i)
		// The window opened at t0+1m and lasts an hour.
		assert.Equal(t, t0.Add(61*time.Minute), d.ResetAt.UTC(), "hit %d reset_at", i)
		assert.Equal(t, time.Duration(61-i)*time.Minute, d.ResetIn, "hit %d reset in", i)
	}
}

func TestRetryAfterIsWholeSecondsNeverNegative(t *testing.T) {
	l, err := ratelab.NewLimiter(&mapStore{}, 1, 10*time.Second)
	require.NoError(t, err)
	_, err = l.AllowAt("k", t0) // window ends at t0+10s
	require.NoError(t, err)
	d, err := l.AllowAt("k", t0.Add(3700*time.Millisecond))
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 7*time.Second, d.ResetIn, "reset_at − now in whole seconds, as the original's integer time()")

	// A store whose reset_at is already past (a slow store, a clock step)
	// must not produce a negative Retry-After.
	past := stubStore{hit: ratelab.Hit{Count: 5, ResetAt: t0.Add(-time.Minute)}}
	l, err = ratelab.NewLimiter(past, 1, 10*time.Second)
	require.NoError(t, err)
	d, err = l.AllowAt("k", t0)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(0), d.ResetIn)
}

type stubStore struct {
	hit ratelab.Hit
	err error
}

func (s stubStore) HitAt(string, time.Duration, time.Time) (ratelab.Hit, error) { return s.hit, s.err }

func TestLimiterPassesFailOpenThrough(t *testing.T) {
	cause := errors.New("disk full")
	l, err := ratelab.NewLimiter(stubStore{hit: ratelab.FreshHit(t0, time.Hour, cause)}, 30, time.Hour)
	require.NoError(t, err)
	d, err := l.AllowAt("k", t0)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(1), d.Count)
	assert.ErrorIs(t, d.NotCounted, cause)
}

func newServer(t *testing.T, store ratelab.Store, limit int, now func() time.Time) http.Handler {
	t.Helper()
	l, err := ratelab.NewLimiter(store, limit, time.Hour)
	require.NoError(t, err)
	mw := &ratelab.Middleware{Limiter: l, Now: now}
	return mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "demo started")
	}))
}

func get(h http.Handler, remoteAddr string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/demo", nil)
	req.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestMiddlewareAnswers429WithHeaders(t *testing.T) {
	now := t0
	h := newServer(t, &mapStore{}, 30, func() time.Time { return now })
	for i := 1; i <= 30; i++ {
		rec := get(h, "203.0.113.7:5555")
		require.Equal(t, http.StatusOK, rec.Code, "hit %d", i)
		assert.Equal(t, `"default";q=30;w=3600`, rec.Header().Get("RateLimit-Policy"))
		assert.Equal(t, fmt.Sprintf(`"default";r=%d;t=3600`, 30-i), rec.Header().Get("RateLimit"))
		assert.Empty(t, rec.Header().Get("Retry-After"), "hit %d", i)
	}
	now = t0.Add(30 * time.Minute)
	rec := get(h, "203.0.113.7:5555")
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "1800", rec.Header().Get("Retry-After"))
	assert.Equal(t, `"default";q=30;w=3600`, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"default";r=0;t=1800`, rec.Header().Get("RateLimit"))
	assert.Contains(t, rec.Body.String(), "retry after 1800 seconds")

	// Another address has its own bucket.
	assert.Equal(t, http.StatusOK, get(h, "198.51.100.1:5555").Code)
}

func TestMiddlewareIgnoresForwardedFor(t *testing.T) {
	h := newServer(t, &mapStore{}, 1, func() time.Time { return t0 })
	require.Equal(t, http.StatusOK, get(h, "10.0.0.1:1", "X-Forwarded-For", "203.0.113.1").Code)
	// A new X-Forwarded-For does not buy a new bucket: the key is the connection's address.
	assert.Equal(t, http.StatusTooManyRequests, get(h, "10.0.0.1:2", "X-Forwarded-For", "203.0.113.2").Code)
}

func TestRemoteAddrKey(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"203.0.113.7:5555", "demo-start:ip:203.0.113.7"},
		{"[2001:db8::1]:443", "demo-start:ip:2001:db8::1"},
		{"203.0.113.7", "demo-start:ip:203.0.113.7"}, // no port, as some CGI hosts give it
	}
	key := ratelab.RemoteAddrKey("demo-start:ip:")
	for _, tt := range tests {
		req := httptest.NewRequest("GET", "/", nil)
		req.RemoteAddr = tt.remote
		got, err := key(req)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "remote %q", tt.remote)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.RemoteAddr = ""
	_, err := key(req)
	assert.ErrorContains(t, err, "no remote address")
}

func TestMiddlewareUnkeyableRequestIs500(t *testing.T) {
	h := newServer(t, &mapStore{}, 1, nil)
	assert.Equal(t, http.StatusInternalServerError, get(h, "").Code)
}

func TestMiddlewareAnswers503WhenStoreCannotDecide(t *testing.T) {
	store := stubStore{err: fmt.Errorf("fixedfilestore: %w: disk gone", ratelab.ErrUnavailable)}
	called := false
	l, err := ratelab.NewLimiter(store, 30, time.Hour)
	require.NoError(t, err)
	h := (&ratelab.Middleware{Limiter: l}).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	rec := get(h, "203.0.113.7:1")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.False(t, called, "next must not run when the limiter cannot decide")
}

func TestMiddlewareFailOpenLetsThrough(t *testing.T) {
	store := stubStore{hit: ratelab.FreshHit(t0, time.Hour, errors.New("disk gone"))}
	h := newServer(t, store, 30, func() time.Time { return t0 })
	rec := get(h, "203.0.113.7:1")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, `"default";r=29;t=3600`, rec.Header().Get("RateLimit"))
}

func TestKeyDigest(t *testing.T) {
	// sha256("demo-start:ip:203.0.113.7"), as PHP's hash('sha256', $key) gives it.
	assert.Equal(t, "fa404fc5fdf396553b0d7703ad73ccb8c5ee2ca7e6ba94f5399c5d635e85a1e8", ratelab.KeyDigest("demo-start:ip:203.0.113.7"))
	assert.Len(t, ratelab.KeyDigest("../../etc/passwd"), 64)
}
