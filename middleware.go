package ratelab

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// KeyFunc names the bucket a request is counted in.
type KeyFunc func(r *http.Request) (string, error)

// !+key
// RemoteAddrKey returns a KeyFunc that keys requests by the host part of the
// connection's remote address (REMOTE_ADDR under CGI), after prefix: with
// prefix "demo-start:ip:" it gives the original's key.
//
// It never reads X-Forwarded-For or similar headers: any client can send
// them. Behind a reverse proxy or CDN every client then shares the proxy's
// address and one bucket; key on a forwarded address only in a KeyFunc of
// your own that trusts just your proxy's header. Behind CGNAT or an office
// NAT many users share one address, so the limit is per address, not per
// person.
func RemoteAddrKey(prefix string) KeyFunc {
	return func(r *http.Request) (string, error) {
		addr := r.RemoteAddr
		if host, _, err := net.SplitHostPort(addr); err == nil {
			addr = host
		}
		if addr == "" {
			return "", errors.New("ratelab: request has no remote address")
		}
		return prefix + addr, nil
	}
}

// !-key

// Middleware puts a Limiter in front of a handler.
//
// Every answer carries the IETF draft fields (draft-ietf-httpapi-ratelimit-headers):
//
//	RateLimit-Policy: "default";q=30;w=3600
//	RateLimit: "default";r=0;t=1800
//
// where q is the limit, w the window in seconds, r the hits remaining and t
// the seconds until the window resets. A throttled request gets 429 Too Many
// Requests with Retry-After: t. When the store cannot decide (a fail-closed
// store whose state is unreachable) the answer is 503 Service Unavailable
// and next is not called.
type Middleware struct {
	Limiter *Limiter
	// Key names a request's bucket; nil means RemoteAddrKey("ip:").
	Key KeyFunc
	// Policy names the policy in the RateLimit fields; "" means "default".
	Policy string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line for each request that could not be decided;
	// nil means slog.Default().
	Logger *slog.Logger
}

// Wrap returns next behind the limiter.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	key := m.Key
	if key == nil {
		key = RemoteAddrKey("ip:")
	}
	policy := m.Policy
	if policy == "" {
		policy = "default"
	}
	now := m.Now
	if now == nil {
		now = time.Now
	}
	logger := m.Logger
	if logger == nil {
		logger = slog.Default()
	}
	policyField := fmt.Sprintf("%q;q=%d;w=%d", policy, m.Limiter.limit, int64(m.Limiter.window/time.Second))

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, err := key(r)
		if err != nil {
			logger.Error("ratelab: cannot key request", "err", err)
			http.Error(w, "rate limiter cannot identify the client", http.StatusInternalServerError)
			return
		}
		d, err := m.Limiter.AllowAt(k, now())
		if err != nil {
			logger.Error("ratelab: rate limiter unavailable, refusing request", "err", err)
			http.Error(w, "rate limiter unavailable, try again later", http.StatusServiceUnavailable)
			return
		}
		resetIn := strconv.FormatInt(int64(d.ResetIn/time.Second), 10)
		h := w.Header()
		h.Set("RateLimit-Policy", policyField)
		h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%s", policy, d.Remaining, resetIn))
		if !d.Allowed {
			h.Set("Retry-After", resetIn)
			http.Error(w, "rate limit exceeded: retry after "+resetIn+" seconds", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}
