package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/httplimit"
)

// The middleware answers 429 with Retry-After and the IETF fields.
func ExampleMiddleware() {
	limiter, _ := ratelab.NewLimiter(new(brokeninmemory.Store), ratelab.Rule{Name: "demo-start", Limit: 1, Window: time.Hour})
	now := func() time.Time { return time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC) }
	mw := &httplimit.Middleware{Limiter: limiter, Key: httplimit.RemoteAddrKey("ip:"), Now: now}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "demo started") }))

	for range 2 {
		req := httptest.NewRequest("POST", "/demo", nil)
		req.RemoteAddr = "203.0.113.7:50000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("RateLimit"))
	}
	// Output:
	// 200  "demo-start";r=0;t=3600
	// 429 3600 "demo-start";r=0;t=3600
}
