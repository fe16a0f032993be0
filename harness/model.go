package harness

import (
	"fmt"

	"github.com/ratelab/ratelab"
)

// Model is an execution model: how requests map onto processes.
type Model string

const (
	// Single is one long-lived process serving every request: a laptop,
	// docker compose.
	Single Model = "single"
	// Pool is K long-lived worker processes with requests spread
	// round-robin: gunicorn, several replicas, PHP in a worker mode.
	Pool Model = "pool"
	// CGI is a fresh process per request: CGI and suEXEC shared hosting.
	CGI Model = "cgi"
	// TwoHosts is two pools of workers, each with a state directory of its
	// own — two machines behind one load balancer — with requests spread
	// round-robin over both.
	TwoHosts Model = "two-hosts"
)

// Models returns the execution models of demo-broken and demo-fixed, in
// the order the reports show them.
func Models() []Model { return []Model{Single, Pool, CGI} }

// ParseModel parses single, pool, cgi or two-hosts.
func ParseModel(s string) (Model, error) {
	for _, m := range append(Models(), TwoHosts) {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("harness: unknown model %q: use single, pool, cgi or two-hosts", s)
}

// Scenario is what Expect predicts from: a model, an app (store, limit,
// window), how many workers a pool has, and how many requests one client
// sends, one at a time.
type Scenario struct {
	Model    Model
	App      App
	Workers  int // pool size (per host for two-hosts)
	Requests int
	// Outage says that the App's store cannot be reached: every hit
	// follows App.FailPolicy (open or local).
	Outage bool
}

// !+expect

// Expect predicts how many of one client's requests a model lets through
// with a store, and says why. This is the lesson in one function.
func Expect(s Scenario) (ok int, why string) {
	n, limit := s.Requests, s.App.Limit
	shares := func(parts int) (ok int) { // round-robin: part p gets every parts-th request
		for p := range parts {
			ok += min(n/parts+btoi(p < n%parts), limit)
		}
		return ok
	}
	k, err := kindOf(s.App.Store)
	switch {
	case err != nil:
		return 0, err.Error()
	case s.Outage && s.App.FailPolicy != ratelab.FailLocal:
		return n, "never 429: the store cannot answer, and fail-open lets every hit through uncounted"
	case s.Outage: // fail-local: the memory store's counts, for another reason
		ok, _ := Expect(Scenario{Model: s.Model, App: App{Store: Memory, Limit: limit}, Workers: s.Workers, Requests: s.Requests})
		return ok, map[Model]string{
			Single: fmt.Sprintf("%d let through: each process decides alone, and there is one", limit),
			Pool:   fmt.Sprintf("%d workers × %d = %d let through: each worker decides alone", s.Workers, limit, s.Workers*limit),
			CGI:    "never 429: each process decides alone and serves one request — no better than fail-open",
		}[s.Model]
	case k.Reach == AllHosts:
		return min(n, limit), fmt.Sprintf("%d let through: every process on every host shares %s", limit, k.Shares)
	case k.Reach == OneMachine && s.Model == TwoHosts:
		return shares(2), fmt.Sprintf("2 hosts × %d = %d let through: flock(2) stops at each machine's edge", limit, 2*limit)
	case k.Reach == OneMachine:
		return min(n, limit), fmt.Sprintf("%d let through in every model: all processes share %s", limit, k.Shares)
	case s.Model == TwoHosts:
		return shares(2 * s.Workers), fmt.Sprintf("%d workers × %d: each worker's map counts only its share", 2*s.Workers, limit)
	}
	switch s.Model {
	case Pool:
		k := s.Workers
		return shares(k), fmt.Sprintf("%d workers × %d = %d let through: each worker's map counts only its share", k, limit, k*limit)
	case CGI:
		return n, "never 429: every request is a new process whose map starts empty"
	}
	return min(n, limit), fmt.Sprintf("%d let through: one process, one map (works on my machine)", limit)
}

// !-expect

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
