package httplimit_test

import (
	"bytes"
	"errors"
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

// Header conformance, case by case: the status, Retry-After (an integer,
// rounded up, never earlier than the RateLimit field's t), the fields, and
// what the metrics counted.
func TestHeaderCases(t *testing.T) {
	minute := ratelab.Rule{Name: "per-minute", Limit: 2, Window: time.Minute}
	hour := ratelab.Rule{Name: "per-hour", Limit: 3, Window: time.Hour}
	at := t0.Add(1500 * time.Millisecond) // half a second into a second: rounding shows
	type want struct {
		code                   int
		retryAfter, rl, policy string
		outcome                string
		policyCounted          string
		calledNext             bool
		logContains            string
	}
	tests := []struct {
		name    string
		mw      func(m *httplimit.Middleware)
		store   ratelab.Store
		rules   []ratelab.Rule
		request int // the request (1-based) whose answer is checked
		want    want
	}{
		{"allowed, two policies", nil, new(brokeninmemory.Store), []ratelab.Rule{minute, hour}, 1,
			want{200, "", `"per-minute";r=1;t=60`, `"per-minute";q=2;w=60, "per-hour";q=3;w=3600`, httplimit.Allowed, "per-minute", true, ""}},
		{"refused by the minute, Retry-After = t rounded up", nil, new(brokeninmemory.Store), []ratelab.Rule{minute, hour}, 3,
			want{429, "60", `"per-minute";r=0;t=60`, `"per-minute";q=2;w=60, "per-hour";q=3;w=3600`, httplimit.Throttled, "per-minute", false, ""}},
		{"allowlisted: not counted, no fields", func(m *httplimit.Middleware) {
			m.Allow = func(r *http.Request) bool { return r.Header.Get("X-Internal") == "yes" }
		}, new(brokeninmemory.Store), []ratelab.Rule{minute}, 5,
			want{200, "", "", "", httplimit.Allowlisted, "per-minute", true, ""}},
		{"dry run: would refuse, passes, logs", func(m *httplimit.Middleware) { m.DryRun = true },
			new(brokeninmemory.Store), []ratelab.Rule{minute}, 3,
			want{200, "", `"per-minute";r=0;t=60`, `"per-minute";q=2;w=60`, httplimit.DryRunRefused, "per-minute", true, "would have been refused"}},
		{"fail-open: passes, counted as not counted, no state claimed", nil,
			storetest.Stub{D: ratelab.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Minute, Source: ratelab.Uncounted, Cause: errors.New("disk gone")}},
			[]ratelab.Rule{minute}, 1,
			want{200, "", "", `"per-minute";q=2;w=60`, httplimit.NotCounted, "per-minute", true, ""}},
		{"fail-closed: 503, no fields", nil, storetest.Stub{Err: ratelab.ErrUnavailable}, []ratelab.Rule{minute}, 1,
			want{503, "", "", "", httplimit.Unavailable, "per-minute", false, "unavailable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ratelab.NewLimiter(tt.store, tt.rules...)
			require.NoError(t, err)
			var logs bytes.Buffer
			metrics := new(httplimit.Metrics)
			mw := &httplimit.Middleware{Limiter: l, Metrics: metrics, Now: func() time.Time { return at },
				Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			if tt.mw != nil {
				tt.mw(mw)
			}
			called := false
			h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
			var rec *httptest.ResponseRecorder
			for i := 1; i <= tt.request; i++ {
				called = false
				req := httptest.NewRequest("POST", "/demo", nil)
				req.RemoteAddr = "203.0.113.7:1"
				if strings.Contains(tt.name, "allowlisted") {
					req.Header.Set("X-Internal", "yes")
				}
				rec = httptest.NewRecorder()
				h.ServeHTTP(rec, req)
			}
			got := want{rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit"), rec.Header().Get("RateLimit-Policy"),
				tt.want.outcome, tt.want.policyCounted, called, tt.want.logContains}
			assert.Equal(t, tt.want, got)
			assert.NotZero(t, metrics.Count(tt.want.policyCounted, tt.want.outcome), "metrics: %s/%s", tt.want.policyCounted, tt.want.outcome)
			if tt.want.logContains != "" {
				assert.Contains(t, logs.String(), tt.want.logContains)
			}
			if ra := rec.Header().Get("Retry-After"); ra != "" {
				assert.Regexp(t, `^[0-9]+$`, ra, "Retry-After is delay-seconds")
				assert.Contains(t, rec.Header().Get("RateLimit"), ";t="+ra, "Retry-After equals t")
			}
		})
	}
}

// The counters are served in the Prometheus text format, by policy and
// outcome, never by key.
func TestMetricsExposition(t *testing.T) {
	var m httplimit.Metrics
	l, err := ratelab.NewLimiter(new(brokeninmemory.Store), ratelab.Rule{Name: "demo-start", Limit: 1, Window: time.Hour})
	require.NoError(t, err)
	h := (&httplimit.Middleware{Limiter: l, Metrics: &m, Logger: newDiscardLogger()}).Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, addr := range []string{"203.0.113.7:1", "203.0.113.7:1", "198.51.100.9:1"} {
		req := httptest.NewRequest("POST", "/", nil)
		req.RemoteAddr = addr
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	rec := httptest.NewRecorder()
	m.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", rec.Header().Get("Content-Type"))
	assert.Equal(t, `# HELP ratelab_requests_total Requests the rate limiter decided, by policy and outcome.
# TYPE ratelab_requests_total counter
ratelab_requests_total{policy="demo-start",outcome="allowed"} 2
ratelab_requests_total{policy="demo-start",outcome="throttled"} 1
`, rec.Body.String())
	assert.NotContains(t, rec.Body.String(), "203.0.113.7", "no per-key labels")
}
