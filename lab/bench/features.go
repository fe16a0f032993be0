//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/httplimit"
)

// Feature is what one operator feature of the middleware costs per request.
type Feature struct {
	Name    string
	PerReq  time.Duration
	OverOff float64 // against the middleware without it, in the same rounds
}

// features measures the middleware on the in-memory store — so that what
// a feature adds is not hidden behind a store's system calls — without any
// feature and with each one, in turns, and reports medians.
func features(o Options) ([]Feature, error) {
	newMW := func(set func(m *httplimit.Middleware)) (http.Handler, error) {
		l, err := ratelab.NewLimiter(new(brokeninmemory.Store), ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour})
		if err != nil {
			return nil, err
		}
		m := &httplimit.Middleware{Limiter: l, Now: benchNow}
		if set != nil {
			set(m)
		}
		return m.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), nil
	}
	variants := []struct {
		name string
		set  func(m *httplimit.Middleware)
	}{
		{"none (the middleware alone)", nil},
		{"Metrics", func(m *httplimit.Middleware) { m.Metrics = new(httplimit.Metrics) }},
		{"DryRun", func(m *httplimit.Middleware) { m.DryRun = true }},
		{"Allow (a predicate that says no)", func(m *httplimit.Middleware) {
			m.Allow = func(r *http.Request) bool { return r.Header.Get("X-Internal") != "" }
		}},
		{"Client with trusted proxies, X-Forwarded-For of 3 hops", func(m *httplimit.Middleware) {
			m.Key = httplimit.Client{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, Header: "X-Forwarded-For"}.Key("ip:")
		}},
	}
	req := httptest.NewRequest("POST", "/demo", nil)
	req.RemoteAddr = "10.0.0.2:41000"
	req.Header.Set("X-Forwarded-For", "198.51.100.1, 203.0.113.7, 10.0.0.9")
	var fns []func() error
	for _, v := range variants {
		h, err := newMW(v.set)
		if err != nil {
			return nil, err
		}
		w := httptest.NewRecorder()
		fns = append(fns, func() error { h.ServeHTTP(w, req); return nil })
	}
	rounds, err := inTurns(o.Rounds, o.PerRound, fns...)
	if err != nil {
		return nil, err
	}
	var out []Feature
	for i, v := range variants {
		out = append(out, Feature{Name: v.name,
			PerReq:  time.Duration(medianOf(rounds, func(r []float64) float64 { return r[i] })),
			OverOff: medianOf(rounds, func(r []float64) float64 { return r[i] / r[0] })})
	}
	return out, nil
}
