package httplimit

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sync"
)

// The outcomes Metrics counts.
const (
	Allowed       = "allowed"         // within the limit, counted
	Throttled     = "throttled"       // refused: 429
	NotCounted    = "not_counted"     // let through uncounted: the store failed open
	LocalAllowed  = "local_allowed"   // allowed by this process alone: the store failed local
	LocalRefused  = "local_throttled" // refused by this process alone (429): the store failed local
	Unavailable   = "unavailable"     // refused: 503, the store failed closed
	DryRunRefused = "dry_run_refused" // would have been refused; DryRun let it through
	Allowlisted   = "allowlisted"     // never counted: Allow said so
)

// Metrics counts a Middleware's decisions by policy and outcome — never
// by key, which would make one series per client. It serves them in the
// Prometheus text exposition format, the format Prometheus and most
// scrapers read, which needs no dependency to write; the standard expvar
// would publish into a process-wide registry, and a rate limiter's
// counters belong to its middleware. A policy is the binding rule's name
// (the first rule's for requests that never reached a rule). The zero
// value is ready; a Metrics is safe for concurrent use.
type Metrics struct {
	mu     sync.Mutex
	counts map[[2]string]uint64
}

func (m *Metrics) add(policy, outcome string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[[2]string]uint64{}
	}
	m.counts[[2]string{policy, outcome}]++
}

// Count returns how many requests of policy had outcome.
func (m *Metrics) Count(policy, outcome string) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[[2]string{policy, outcome}]
}

// ServeHTTP writes every counter as ratelab_requests_total{policy, outcome}.
func (m *Metrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	keys := make([][2]string, 0, len(m.counts))
	for k := range m.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	counts := make([]uint64, len(keys))
	for i, k := range keys {
		counts[i] = m.counts[k]
	}
	m.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintln(w, "# HELP ratelab_requests_total Requests the rate limiter decided, by policy and outcome.")
	fmt.Fprintln(w, "# TYPE ratelab_requests_total counter")
	for i, k := range keys {
		fmt.Fprintf(w, "ratelab_requests_total{policy=%q,outcome=%q} %d\n", k[0], k[1], counts[i])
	}
}
