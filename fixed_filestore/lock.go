package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// !+withlock

// withLock takes an exclusive flock(2) on fd, waiting at most s.lockWait
// or until ctx ends, runs crit while it holds the lock, then unlocks and
// closes fd. fd is closed whatever happens; name, the file's, is only for
// the error.
func (s *Store) withLock(ctx context.Context, fd int, name string, crit func() error) error {
	if err := lockWithin(ctx, fd, lockExclusive, s.lockWait); err != nil {
		closeFD(fd)
		return fmt.Errorf("lock %s: %w", s.pathOf(name), err)
	}
	// Closing alone would release the lock too; unlocking first says so.
	// !+unlock
	defer closeFD(fd)
	defer funlock(fd)
	return crit()
	// !-unlock
}

// lockWithin takes a flock(2) of kind on fd, waiting at most wait, or
// until ctx ends. flock(2) itself takes no deadline, so it tries without
// blocking and sleeps between tries (pollDelay), waking when ctx ends;
// WaitForever blocks instead, ignoring ctx.
func lockWithin(ctx context.Context, fd int, kind lockKind, wait time.Duration) error {
	if wait == WaitForever {
		return flock(fd, kind, true)
	}
	var start time.Time
	var delay time.Duration
	for {
		err := flock(fd, kind, false)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errWouldBlock):
			return fmt.Errorf("flock: %w", err)
		}
		if start.IsZero() {
			start = time.Now()
		}
		waited := time.Since(start)
		if waited >= wait {
			return fmt.Errorf("%w (%v)", ErrLockTimeout, wait)
		}
		delay = pollDelay(delay, waited)
		if err := sleep(ctx, min(delay, wait-waited)); err != nil {
			return fmt.Errorf("waiting for the lock: %w", err)
		}
	}
}

// sleep waits d, or until ctx ends: then it returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	if ctx.Done() == nil { // a context that never ends: no timer to stop
		time.Sleep(d)
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// pollDelay is a waiter's sleep before its next try, after a sleep of last
// and a wait of waited so far: doubling from 20 µs, at most 100 µs while
// the wait is short — a holder keeps the lock for microseconds — and, once
// it is long (a hung holder, a flood), at most an eighth of it, up to
// 10 ms, so that a wait of seconds costs a few hundred tries, not tens of
// thousands. Go's timers wake a sleeper no sooner than they can, which can
// be much later than it asked: docs/performance.md measures a sleep of
// 20 µs on the machine it ran on.
func pollDelay(last, waited time.Duration) time.Duration {
	if last == 0 {
		return 20 * time.Microsecond
	}
	return min(2*last, max(100*time.Microsecond, waited/8), 10*time.Millisecond)
}

// !-withlock
