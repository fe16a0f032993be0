package httplimit_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
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

// !+client

// Behind your own proxies, name their networks and the one header they
// append to: the client is the first forwarded address from the right
// that is not one of them, and a spoofed entry on the left never picks a
// bucket. IPv6 clients are keyed by their
// /56, so a customer's whole allocation is one client.
func ExampleClient() {
	client := httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "X-Forwarded-For"}
	key := client.Key("ip:")

	req := httptest.NewRequest("POST", "/demo", nil)
	req.RemoteAddr = "10.0.0.2:41000" // your load balancer
	req.Header.Set("X-Forwarded-For", "6.6.6.6, 2001:db8:1234:5678::1")
	k, _ := key(req)
	fmt.Println(k)
	// Output:
	// ip:2001:db8:1234:5600::/56
}

// !-client

// !+operate

// Try a limit on real traffic before enforcing it: in DryRun every request
// passes, a would-be refusal is logged and counted, and Metrics serves the
// counts by policy and outcome in the Prometheus text format.
func ExampleMiddleware_dryRun() {
	limiter, _ := ratelab.NewLimiter(new(brokeninmemory.Store), ratelab.Rule{Name: "signup", Limit: 1, Window: time.Hour})
	metrics := new(httplimit.Metrics)
	mw := &httplimit.Middleware{
		Limiter: limiter,
		DryRun:  true,
		Metrics: metrics,
		Allow:   func(r *http.Request) bool { return r.Header.Get("X-Monitoring") != "" }, // never counted
		Logger:  slog.New(slog.DiscardHandler),
	}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for range 3 {
		req := httptest.NewRequest("POST", "/signup", nil)
		req.RemoteAddr = "203.0.113.7:50000"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit"))
	}
	fmt.Println(metrics.Count("signup", httplimit.Allowed), "allowed,", metrics.Count("signup", httplimit.DryRunRefused), "would have been refused")
	// Output:
	// 200 "signup";r=0;t=3600
	// 200 "signup";r=0;t=3600
	// 200 "signup";r=0;t=3600
	// 1 allowed, 2 would have been refused
}

// !-operate
