package ratelab_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// The limiter allows 30 hits per window; the 31st is throttled and told
// when to retry.
func ExampleLimiter_AllowAt() {
	limiter, err := ratelab.NewLimiter(new(brokeninmemory.Store), 30, time.Hour)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	var d ratelab.Decision
	for i := range 31 {
		d, _ = limiter.AllowAt("demo-start:ip:203.0.113.7", start.Add(time.Duration(i)*time.Minute))
	}
	fmt.Println("allowed:", d.Allowed, "count:", d.Count, "retry after:", d.ResetIn)
	// Output:
	// allowed: false count: 31 retry after: 30m0s
}

// The middleware answers 429 with Retry-After and the IETF fields.
func ExampleMiddleware() {
	limiter, _ := ratelab.NewLimiter(new(brokeninmemory.Store), 1, time.Hour)
	now := func() time.Time { return time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC) }
	mw := &ratelab.Middleware{Limiter: limiter, Key: ratelab.RemoteAddrKey("demo-start:ip:"), Now: now}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "demo started") }))

	for range 2 {
		req := httptest.NewRequest("POST", "/demo", nil)
		req.RemoteAddr = "203.0.113.7:50000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200  "default";r=0;t=3600
	// 429 3600 "default";r=0;t=3600
}
