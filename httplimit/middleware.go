// Package httplimit puts a ratelab.Limiter in front of an http.Handler:
// 429 Too Many Requests with Retry-After and the IETF RateLimit fields,
// 503 Service Unavailable when a fail-closed store cannot decide. It lives
// apart from package ratelab so that a program that only counts hits — a
// CGI program started once per request — does not link net/http.
package httplimit

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/logevery"
)

// KeyFunc names the bucket a request is counted in.
type KeyFunc func(r *http.Request) (string, error)

// !+key

// RemoteAddrKey returns a KeyFunc that keys requests on the connection's
// address (REMOTE_ADDR under CGI) after prefix — an IPv4 address whole, an
// IPv6 address by its /56 network (see DefaultIPv6Prefix): with prefix
// "ip:" and the rule "demo-start" it gives the original's key for IPv4.
// It is Client{}.Key(prefix).
//
// It never reads X-Forwarded-For or similar headers: any client can send
// them. Behind a reverse proxy or CDN every client then shares the proxy's
// address and one bucket; name your proxies in Client.TrustedProxies, and
// the one header they write in Client.Header, to key on the address they
// pass on. Behind CGNAT or an office NAT many
// users share one address, so the limit is per address, not per person.
func RemoteAddrKey(prefix string) KeyFunc { return Client{}.Key(prefix) }

// !-key

// Middleware puts a Limiter in front of a handler.
//
// Every answer carries the IETF draft fields, as
// draft-ietf-httpapi-ratelimit-headers-08 to -10 write them
// (https://www.ietf.org/archive/id/draft-ietf-httpapi-ratelimit-headers-10.txt),
// with t as -08 and -09 define it — until the quota resets; -10 redefines
// it as until additional quota is available, which the sliding algorithms
// reach sooner: one policy per rule of the limiter, and the binding
// rule's state:
//
//	RateLimit-Policy: "per-minute";q=10;w=60, "per-hour";q=100;w=3600
//	RateLimit: "per-minute";r=0;t=42
//
// where q is the limit, w the window in seconds, r the hits remaining and t
// the seconds until the binding rule has room again: for an allowed
// request until its full allowance is back, for a refused one until one
// more hit is allowed. A refused request gets 429 Too Many Requests with
// Retry-After equal to t — also when a fail-local store's process decided
// alone (Metrics counts those apart). Seconds are rounded up, so a client that waits
// them is never early. When the store cannot decide (a fail-closed store
// whose state is unreachable) the answer is 503 Service Unavailable and
// next is not called; a request a fail-open store let through uncounted
// gets RateLimit-Policy but no RateLimit field, for nothing is known of
// its state. The request's context reaches the store: a client
// that goes away ends the store's wait.
//
// An allowlisted request (Allow) is passed on without being counted and
// without RateLimit fields: it is not under any policy. In DryRun, a
// request that would be refused is passed on all the same, with its
// RateLimit fields (r=0) but no Retry-After, and a log line.
type Middleware struct {
	Limiter *ratelab.Limiter
	// Key names a request's bucket; nil means RemoteAddrKey("ip:").
	Key KeyFunc
	// Allow, if set, is asked first: a request it returns true for is
	// passed to next uncounted.
	Allow func(r *http.Request) bool
	// DryRun decides and reports every request but refuses none: try a
	// limit on real traffic before enforcing it.
	DryRun bool
	// Metrics, if set, counts every decision by policy and outcome.
	Metrics *Metrics
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives a line when a request could not be keyed or
	// decided and, in DryRun, when one would have been refused: each kind
	// at most once every ratelab.LogEvery of Now, then with held_back, the
	// number not written since; nil means slog.Default().
	Logger *slog.Logger
}

// Wrap returns next behind the limiter.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	h := &limited{
		m: m, next: next,
		key: m.Key, now: m.Now,
		count: m.Metrics.add, // a nil *Metrics counts nothing
		first: m.Limiter.Rules()[0].Name,
	}
	if h.key == nil {
		h.key = RemoteAddrKey("ip:")
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.log = logevery.New(cmp.Or(m.Logger, slog.Default()), ratelab.LogEvery)
	var policies []string
	for _, r := range m.Limiter.Rules() {
		policies = append(policies, fmt.Sprintf("%q;q=%d;w=%d", r.Name, r.Limit, int64(r.Window/time.Second)))
	}
	h.policyField = strings.Join(policies, ", ")
	return h
}

// limited is a handler behind a Middleware, with the Middleware's
// defaults filled in and its RateLimit-Policy field written once.
type limited struct {
	m           *Middleware
	next        http.Handler
	key         KeyFunc
	now         func() time.Time
	log         *logevery.Log
	count       func(policy, outcome string)
	first       string // the first rule's name, for what no rule decided
	policyField string
}

func (l *limited) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if l.m.Allow != nil && l.m.Allow(r) {
		l.count(l.first, Allowlisted)
		l.next.ServeHTTP(w, r)
		return
	}
	k, err := l.key(r)
	if err != nil {
		l.log.At(l.now(), slog.LevelError, "httplimit: cannot key request", "err", err)
		http.Error(w, "rate limiter cannot identify the client", http.StatusInternalServerError)
		return
	}
	l.answer(w, r, k)
}

// !+answer

// answer asks the limiter about one hit on key k, reports the decision in
// the RateLimit fields, and passes the request on if it is allowed.
func (l *limited) answer(w http.ResponseWriter, r *http.Request, k string) {
	d, err := l.m.Limiter.AllowAt(r.Context(), k, l.now())
	if err != nil {
		l.count(l.first, Unavailable)
		l.log.At(l.now(), slog.LevelError, "httplimit: rate limiter unavailable, refusing request", "err", err)
		http.Error(w, "rate limiter unavailable, try again later", http.StatusServiceUnavailable)
		return
	}
	h := w.Header()
	h.Set("RateLimit-Policy", l.policyField)
	wait := d.ResetAfter
	if !d.Allowed {
		wait = d.RetryAfter
	}
	t := strconv.FormatInt(ratelab.CeilSeconds(wait), 10)
	if d.Source != ratelab.Uncounted {
		h.Set("RateLimit", fmt.Sprintf("%q;r=%d;t=%s", d.Rule.Name, d.Remaining, t))
	}
	switch {
	case d.Allowed:
		l.count(d.Rule.Name, allowedOutcome(d))
	case l.m.DryRun:
		l.count(d.Rule.Name, DryRunRefused)
		l.log.At(l.now(), slog.LevelWarn, "httplimit: dry run: this request would have been refused", "policy", d.Rule.Name, "retry_after", t)
	default:
		l.count(d.Rule.Name, refusedOutcome(d))
		h.Set("Retry-After", t)
		http.Error(w, "rate limit exceeded: retry after "+t+" seconds", http.StatusTooManyRequests)
		return
	}
	l.next.ServeHTTP(w, r)
}

// !-answer

// allowedOutcome is the Metrics outcome of an allowed decision: counted,
// let through uncounted (fail-open), or allowed by this process alone
// (fail-local).
func allowedOutcome(d ratelab.Decision) string {
	switch d.Source {
	case ratelab.Local:
		return LocalAllowed
	case ratelab.Uncounted:
		return NotCounted
	}
	return Allowed
}

// refusedOutcome is the Metrics outcome of a refused decision.
func refusedOutcome(d ratelab.Decision) string {
	if d.Source == ratelab.Local {
		return LocalRefused
	}
	return Throttled
}
