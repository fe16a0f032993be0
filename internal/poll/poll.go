// Package poll waits for a state that a server or process reaches on its
// own — ready to answer, a replica known, a session waiting for a lock —
// by asking again until it holds. It waits for a state, never for a clock
// edge.
package poll

import (
	"errors"
	"fmt"
	"time"
)

// Until calls check every interval until it returns nil, and returns nil;
// or until limit has passed, and returns check's last error, saying how
// long it waited. A check that returns an error wrapped by Stop ends the
// wait at once with that error: the state can no longer come (the server
// exited).
func Until(limit, interval time.Duration, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		var stop stopErr
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return stop.err
		case time.Now().After(deadline):
			return fmt.Errorf("after %v: %w", limit, err)
		}
		time.Sleep(interval) // polling for a state, not for a clock edge
	}
}

// Stop wraps err for Until: no point in asking again.
func Stop(err error) error { return stopErr{err} }

type stopErr struct{ err error }

func (e stopErr) Error() string { return e.err.Error() }
