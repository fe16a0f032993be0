// Package brokeninmemory is a rate-limit store that keeps its states in
// process memory: a map guarded by a mutex. Inside one process it is
// correct and race-free, for every algorithm. It is broken anywhere a
// client's requests reach more than one process, because no process can
// see another's memory:
//
//   - CGI and suEXEC shared hosting start a new process for every request.
//     Each starts with an empty map, records count 1 and exits, so the count
//     never reaches 2 and the limiter never answers 429.
//   - A pool of K long-lived workers (gunicorn, several Go replicas, PHP
//     in a worker mode: FrankenPHP workers, RoadRunner, Swoole) gives each
//     worker its own map. Requests spread over the workers, each counts
//     only its share, and up to K × limit get through. PHP-FPM and mod_php
//     are not this row for a PHP array: PHP frees a request's memory,
//     statics included, when the request ends, so an array there fails as
//     under CGI. (APCu under PHP-FPM is shared: the FPM master owns it.)
//   - One long-lived process (a laptop, docker compose) is the only model
//     in which it works, which is why it passes every local test.
//
// The package folder is called broken_inmemory so that nobody copies it into
// production by accident. fixed_filestore keeps the same states, decided by
// the same steps (package algorithm), in files that every process on the
// machine shares.
package brokeninmemory

import (
	"context"
	"sync"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// Store is an in-memory store, the Go twin of the original's
// InMemoryRateLimitStorage. The zero value is ready to use; a Store is safe
// for concurrent use by the goroutines of one process, and by nothing else.
// Entries are never evicted one by one: memory grows with the number of
// keys, up to MaxKeys.
type Store struct {
	// MaxKeys, if positive, bounds the states kept: a hit of a new key
	// when MaxKeys are held first forgets them all, so every key starts
	// over. 0 keeps every state.
	MaxKeys int

	mu     sync.Mutex
	states map[string][]byte // state key + algorithm suffix → encoded state
}

// Take takes one hit of key under r now; it is TakeAt(ctx, r, key, time.Now()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	return s.TakeAt(ctx, r, key, time.Now())
}

// !+take

// TakeAt takes one hit of key under r at now and decides it; r and now
// are trusted, as the ratelab.Store contract says. Its one error is a
// state of another rule of the same name (ratelab.ErrRuleConflict); it
// never waits, so ctx is not consulted.
func (s *Store) TakeAt(_ context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	id := r.StateKey(key) + algorithm.Suffix(r.Algorithm)
	s.mu.Lock()
	defer s.mu.Unlock()
	res, err := algorithm.Take(nil, s.states[id], r, now)
	if err != nil {
		return ratelab.Decision{}, err
	}
	if res.State != nil {
		if _, ok := s.states[id]; s.states == nil || !ok && s.MaxKeys > 0 && len(s.states) >= s.MaxKeys {
			s.states = make(map[string][]byte)
		}
		s.states[id] = res.State
	}
	return res.Decision, nil
}

// !-take

// Reset forgets the state of key under r, a checked rule.
func (s *Store) Reset(_ context.Context, r ratelab.Rule, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, r.StateKey(key)+algorithm.Suffix(r.Algorithm))
	return nil
}

// FallbackKeys is a bound for a Store that stands in for a shared one
// under ratelab.FailLocal — the lesson's broken store, made a bounded
// fallback — about 10 MB of fixed windows. It decides as the shared store
// would for one process, so a pool of K workers lets at most K × limit
// through per key while the shared store is out, and a CGI program, whose
// process serves one request, no fewer than fail-open does.
const FallbackKeys = 1 << 16
