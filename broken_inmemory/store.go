// Package brokeninmemory is a fixed-window rate-limit store that keeps its
// counts in process memory: a map guarded by a mutex. Inside one process it
// is correct and race-free. It is broken anywhere a client's requests reach
// more than one process, because no process can see another's memory:
//
//   - CGI and suEXEC shared hosting start a new process for every request.
//     Each starts with an empty map, records count 1 and exits, so the count
//     never reaches 2 and the limiter never answers 429.
//   - A pool of K long-lived workers (PHP-FPM, gunicorn, several Go
//     replicas) gives each worker its own map. Requests spread over the
//     workers, each counts only its share, and up to K × limit get through.
//     This is about per-process memory — a PHP array, a Go map. APCu under
//     PHP-FPM is different: the FPM master owns that memory and its workers
//     share it.
//   - One long-lived process (a laptop, docker compose) is the only model
//     in which it works, which is why it passes every local test.
//
// The package folder is called broken_inmemory so that nobody copies it into
// production by accident. fixed_filestore keeps the same state in files
// that every process on the machine shares.
package brokeninmemory

import (
	"sync"
	"time"

	"github.com/ratelab/ratelab"
)

// Store is an in-memory fixed-window store, the Go twin of the original's
// InMemoryRateLimitStorage. The zero value is ready to use; a Store is safe
// for concurrent use by the goroutines of one process, and by nothing else.
// Entries are never evicted, so memory grows with the number of keys.
type Store struct {
	mu      sync.Mutex
	windows map[string]ratelab.State
}

// Hit records one hit for key now; it is HitAt(key, window, time.Now()).
func (s *Store) Hit(key string, window time.Duration) (ratelab.Hit, error) {
	return s.HitAt(key, window, time.Now())
}

// !+hit
// HitAt records one hit for key at now in a window of the given length and
// returns the window after the hit. Its only error is an invalid window.
func (s *Store) HitAt(key string, window time.Duration, now time.Time) (ratelab.Hit, error) {
	if err := ratelab.CheckWindow(window); err != nil {
		return ratelab.Hit{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.windows == nil {
		s.windows = make(map[string]ratelab.State)
	}
	next, _ := s.windows[key].Next(now, window)
	s.windows[key] = next
	return next.Hit(), nil
}

// !-hit
