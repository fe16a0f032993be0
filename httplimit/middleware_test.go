package httplimit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/httplimit"
	"github.com/ratelab/ratelab/lab/storetest"
)

var t0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

var original = ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour}

func newDiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newServer(t *testing.T, store ratelab.Store, now func() time.Time, rules ...ratelab.Rule) http.Handler {
	t.Helper()
	l, err := ratelab.NewLimiter(store, rules...)
	require.NoError(t, err)
	mw := &httplimit.Middleware{Limiter: l, Now: now, Logger: newDiscardLogger()}
	return mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "demo started") }))
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
	rule := ratelab.Rule{Name: "demo-start", Limit: 2, Window: time.Hour}
	h := newServer(t, new(brokeninmemory.Store), func() time.Time { return t0.Add(1500 * time.Millisecond) }, rule)
	var codes []int
	var last *httptest.ResponseRecorder
	for range 3 {
		last = get(h, "203.0.113.7:5555")
		codes = append(codes, last.Code)
	}
	assert.Equal(t, []int{200, 200, 429}, codes)
	assert.Equal(t, "3600", last.Header().Get("Retry-After"), "rounded up: 59m58.5s wait is 3600 s, never early")
	assert.Equal(t, `"demo-start";q=2;w=3600`, last.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"demo-start";r=0;t=3600`, last.Header().Get("RateLimit"))
	assert.Contains(t, last.Body.String(), "retry after 3600 seconds")
}

// Compound rules: every policy in RateLimit-Policy, the binding one in
// RateLimit.
func TestMiddlewareEmitsEveryPolicy(t *testing.T) {
	minute := ratelab.Rule{Name: "per-minute", Limit: 10, Window: time.Minute}
	hour := ratelab.Rule{Name: "per-hour", Limit: 5, Window: time.Hour}
	h := newServer(t, new(brokeninmemory.Store), func() time.Time { return t0 }, minute, hour)
	rec := get(h, "203.0.113.7:1")
	assert.Equal(t, `"per-minute";q=10;w=60, "per-hour";q=5;w=3600`, rec.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"per-hour";r=4;t=3600`, rec.Header().Get("RateLimit"), "the hour binds: 4 left against the minute's 9")
}

func TestMiddlewareIgnoresForwardedFor(t *testing.T) {
	h := newServer(t, new(brokeninmemory.Store), func() time.Time { return t0 }, ratelab.Rule{Name: "r", Limit: 1, Window: time.Hour})
	assert.Equal(t, 200, get(h, "203.0.113.7:1", "X-Forwarded-For", "198.51.100.1").Code)
	assert.Equal(t, 429, get(h, "203.0.113.7:1", "X-Forwarded-For", "198.51.100.2").Code, "a new X-Forwarded-For must not pick a new bucket")
}

func TestRemoteAddrKey(t *testing.T) {
	tests := []struct{ remote, want string }{
		{"203.0.113.7:5555", "ip:203.0.113.7"},
		{"[2001:db8::1]:443", "ip:2001:db8::/56"},
		{"203.0.113.7", "ip:203.0.113.7"}, // no port, as some CGI hosts give it
	}
	key := httplimit.RemoteAddrKey("ip:")
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
	assert.ErrorContains(t, err, "no usable remote address")
}

func TestMiddlewareUnkeyableRequestIs500(t *testing.T) {
	h := newServer(t, new(brokeninmemory.Store), nil, original)
	assert.Equal(t, http.StatusInternalServerError, get(h, "").Code)
}

func TestMiddlewareAnswers503WhenStoreCannotDecide(t *testing.T) {
	store := storetest.Stub{Err: fmt.Errorf("fixedfilestore: %w: disk gone", ratelab.ErrUnavailable)}
	called := false
	l, err := ratelab.NewLimiter(store, original)
	require.NoError(t, err)
	h := (&httplimit.Middleware{Limiter: l, Logger: newDiscardLogger()}).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
	rec := get(h, "203.0.113.7:1")
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.False(t, called, "next must not run when the limiter cannot decide")
}

func TestMiddlewareFailOpenLetsThroughAndPassesTheContext(t *testing.T) {
	var seen context.Context
	store := storetest.Stub{D: ratelab.Decision{Allowed: true, Remaining: 29, ResetAfter: time.Hour, Source: ratelab.Uncounted, Cause: errors.New("disk gone")}, Ctx: &seen}
	h := newServer(t, store, func() time.Time { return t0 }, original)
	req := httptest.NewRequest("POST", "/demo", nil)
	req.RemoteAddr = "203.0.113.7:1"
	type ctxKey struct{}
	req = req.WithContext(context.WithValue(req.Context(), ctxKey{}, "this request"))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
	// The attacker's finding: a client over its limit, let through while
	// Redis was stopped, was told r=29. A hit the store could not count
	// says nothing of the client's state: the policy, no RateLimit field.
	assert.Empty(t, rec.Header().Values("RateLimit"), "RateLimit of a hit let through uncounted")
	assert.NotEmpty(t, rec.Header().Get("RateLimit-Policy"))
	require.NotNil(t, seen)
	assert.Equal(t, "this request", seen.Value(ctxKey{}), "the store gets the request's context")
}

// A fail-local decision is a decision: a refusal is a 429 with its
// Retry-After, not a hit let through because the shared store failed;
// Metrics counts both outcomes apart from the shared store's.
func TestMiddlewareFailLocalRefusesAndCountsApart(t *testing.T) {
	for _, tt := range []struct {
		d       ratelab.Decision
		code    int
		outcome string
	}{
		{ratelab.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Hour, Source: ratelab.Local, Cause: errors.New("redis down")}, 200, httplimit.LocalAllowed},
		{ratelab.Decision{RetryAfter: time.Minute, ResetAfter: time.Hour, Source: ratelab.Local, Cause: errors.New("redis down")}, 429, httplimit.LocalRefused},
		{ratelab.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Hour, Source: ratelab.Uncounted, Cause: errors.New("redis down")}, 200, httplimit.NotCounted},
	} {
		l, err := ratelab.NewLimiter(storetest.Stub{D: tt.d}, original)
		require.NoError(t, err)
		m := &httplimit.Middleware{Limiter: l, Metrics: new(httplimit.Metrics), Logger: newDiscardLogger()}
		rec := get(m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), "203.0.113.7:1")
		assert.Equal(t, tt.code, rec.Code, "%+v", tt.d)
		assert.Equal(t, uint64(1), m.Metrics.Count(original.Name, tt.outcome), "%+v", tt.d)
		if tt.code == 429 {
			assert.Equal(t, "60", rec.Header().Get("Retry-After"))
		}
	}
}

// The attacker's finding at 0574388: under fail-closed an outage wrote a
// line per request (495 of 500), the middleware's own. Each kind of line
// is written once every ratelab.LogEvery of the middleware's clock, then
// with held_back; so are an unkeyable request's and a dry run's.
func TestMiddlewareLogsOnceEveryInterval(t *testing.T) {
	down := storetest.Stub{Err: fmt.Errorf("x: %w: gone", ratelab.ErrUnavailable)}
	full := storetest.Stub{D: ratelab.Decision{Rule: original, Allowed: false, RetryAfter: time.Minute, Source: ratelab.Shared}}
	for _, tt := range []struct {
		name   string
		store  ratelab.Store
		dryRun bool
		addr   string
	}{
		{"unavailable", down, false, "203.0.113.7:1"},
		{"unkeyable", down, false, ""},
		{"dry run", full, true, "203.0.113.7:1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ratelab.NewLimiter(tt.store, original)
			require.NoError(t, err)
			var logged bytes.Buffer
			now := t0
			h := (&httplimit.Middleware{Limiter: l, DryRun: tt.dryRun, Now: func() time.Time { return now },
				Logger: slog.New(slog.NewTextHandler(&logged, nil))}).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			for i := range 21 { // at 0, LogEvery and 2 × LogEvery a line is due
				now = t0.Add(time.Duration(i) * ratelab.LogEvery / 10)
				get(h, tt.addr)
			}
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			if assert.Len(t, lines, 3, logged.String()) {
				assert.Contains(t, lines[1], "held_back=9")
			}
		})
	}
}
