package linearizability

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab"
)

// Request is what one client saw of one request it sent, at the client.
type Request struct {
	Name   string // sent in httphost.RequestHeader: the hit made for it records it
	Client int
	// Sent and Done are when the client sent the request and when it got
	// its answer or gave up (CLOCK_MONOTONIC, ns: the clock of every
	// call and return of the history).
	Sent, Done int64
	Status     int // 0: no answer
	// Remaining is the RateLimit field's r, RetryAfter the Retry-After
	// field (seconds); -1 where the answer has none.
	Remaining, RetryAfter int64
}

// answered reports whether the client got a decision: a 200 or a 429.
func (r Request) answered() bool {
	return r.Status == http.StatusOK || r.Status == http.StatusTooManyRequests
}

// remainingField reads r from a RateLimit field: "demo-start";r=3;t=10.
var remainingField = regexp.MustCompile(`;r=([0-9]+)(;|$)`)

// readAnswer is what a client saw in an answer's fields.
func readAnswer(status int, h http.Header) Request {
	r := Request{Status: status, Remaining: -1, RetryAfter: -1}
	if m := remainingField.FindStringSubmatch(h.Get("RateLimit")); m != nil {
		r.Remaining, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if v, err := strconv.ParseInt(h.Get("Retry-After"), 10, 64); err == nil {
		r.RetryAfter = v
	}
	return r
}

// ErrClients is wrapped by Agree's errors: what the clients saw is not
// what the history records.
var ErrClients = errors.New("what the clients saw is not in the history")

// !+agree

// Agree checks the history against what its clients saw: every request
// sent has at most one hit in the history, and every hit was made for a
// request sent; every 200 or 429 a client got is its hit's decision — 200
// allowed, 429 refused, the same remaining count, and for a 429 the wait
// rounded up to a second. A request its client got no answer to is
// accepted only once a process has killed itself (each writes the instant
// in its own file just before its SIGKILL), and only if its hit, if it
// made one, was made by a process that killed itself: a call its file
// holds without a return was in flight when the process died. So no
// more hits go unanswered than the killed processes had in flight; the
// requests that reached no store changed no state.
func (h History) Agree() error {
	errs := h.disagreements()
	if len(errs) == 0 {
		return nil
	}
	what := "disagreements"
	if len(errs) == 1 {
		what = "disagreement"
	}
	return fmt.Errorf("%w: %d %s among %d requests, the first: %w", ErrClients, len(errs), what, len(h.Requests), errs[0])
}

// !-agree

// disagreements lists what Agree finds, requests first, in the order
// they were sent.
func (h History) disagreements() []error {
	hits := map[string][]porcupine.Operation{}
	for _, op := range h.Ops {
		hits[op.Metadata.(string)] = append(hits[op.Metadata.(string)], op)
	}
	var errs []error
	for _, r := range h.Requests {
		if err := h.agreeOne(r, hits[r.Name]); err != nil {
			errs = append(errs, err)
		}
		delete(hits, r.Name)
	}
	for _, name := range slices.Sorted(maps.Keys(hits)) {
		errs = append(errs, fmt.Errorf("%d hits for request %q, which no client sent", len(hits[name]), name))
	}
	return errs
}

// agreeOne checks one request against the hits made for it.
func (h History) agreeOne(r Request, hits []porcupine.Operation) error {
	switch {
	case len(hits) > 1:
		return fmt.Errorf("request %s: %d hits", r.Name, len(hits))
	case !r.answered():
		return h.lost(r, hits)
	case len(hits) == 0:
		return fmt.Errorf("request %s: answered %d, and no hit was made for it", r.Name, r.Status)
	}
	o := hits[0].Output.(output)
	want := Request{Status: http.StatusTooManyRequests, Remaining: o.Remaining, RetryAfter: ratelab.CeilSeconds(o.RetryAfter)}
	if o.Allowed {
		want.Status, want.RetryAfter = http.StatusOK, -1
	}
	if !o.Known || r.Status != want.Status || r.Remaining != want.Remaining || r.RetryAfter != want.RetryAfter {
		return fmt.Errorf("request %s: the client saw %d, r=%d, Retry-After %d; the hit decided %s", r.Name, r.Status, r.Remaining, r.RetryAfter, answer(o))
	}
	return nil
}

// lost checks a request its client got no answer to: it must have ended
// after a process killed itself, and its hit, if any, must have been made
// by a process that killed itself (and so in flight when it died: its
// goroutines may call another hit between the kill line and the signal).
func (h History) lost(r Request, hits []porcupine.Operation) error {
	killed := false
	for _, k := range h.Kills {
		killed = killed || k <= r.Done
	}
	if !killed {
		return fmt.Errorf("request %s: no answer (status %d), and no process had been killed", r.Name, r.Status)
	}
	if len(hits) == 0 {
		return nil // it reached no store: the front found its worker dead
	}
	if _, ok := h.Kills[hits[0].ClientId]; !ok {
		return fmt.Errorf("request %s: no answer (status %d), and its hit was made by a process that was not killed", r.Name, r.Status)
	}
	return nil
}
