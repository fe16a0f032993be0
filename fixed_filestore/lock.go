package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// maxBlockedWaiters bounds the goroutines of one Store that wait in a
// blocking flock(2) at once; each holds an OS thread while it waits.
const maxBlockedWaiters = 64

// !+withlock

// withLock takes an exclusive flock(2) on fd, waiting at most s.lockWait
// or until ctx ends, runs crit while it holds the lock, then unlocks and
// closes fd. fd is closed whatever happens; name, the file's, is only for
// the error.
//
// A blocking flock(2) cannot be given a deadline, and polling with a
// non-blocking one wakes late and costs hot-key throughput when many
// processes share few cores. So after two non-blocking attempts 20µs apart
// (a holder keeps the lock for microseconds, so many waits end there), a
// goroutine waits in a blocking flock(2) — the kernel wakes it the moment
// the holder lets go — while the caller waits at most s.lockWait for it
// (waitBlocked). When maxBlockedWaiters goroutines already wait (a hung
// holder with heavy traffic), the caller polls instead.
func (s *Store) withLock(ctx context.Context, fd int, name string, crit func() error) error {
	err := s.lockFast(fd)
	if errors.Is(err, errWouldBlock) {
		if s.blockedWaiters.Add(1) <= maxBlockedWaiters {
			return s.waitBlocked(ctx, fd, name, crit)
		}
		s.blockedWaiters.Add(-1)
		err = lockWithin(ctx, fd, lockExclusive, s.lockWait)
	}
	return s.locked(fd, name, err, crit)
}

// lockFast takes the lock in at most two non-blocking tries, 20µs apart:
// short waits, the common case, end in the second. WaitForever blocks.
func (s *Store) lockFast(fd int) error {
	if s.lockWait == WaitForever {
		return flock(fd, lockExclusive, true)
	}
	err := flock(fd, lockExclusive, false)
	if errors.Is(err, errWouldBlock) {
		time.Sleep(20 * time.Microsecond)
		err = flock(fd, lockExclusive, false)
	}
	return err
}

// locked runs crit if the lock was taken (err is nil), then unlocks and
// closes fd. Closing alone would release the lock too; unlocking first
// says so.
func (s *Store) locked(fd int, name string, err error, crit func() error) error {
	if err != nil {
		closeFD(fd)
		return fmt.Errorf("lock %s: %w", s.pathOf(name), err)
	}
	// !+unlock
	defer closeFD(fd)
	defer funlock(fd)
	return crit()
	// !-unlock
}

// waitBlocked waits for the lock in a goroutine's blocking flock(2), and
// for that goroutine at most s.lockWait or until ctx ends. The goroutine
// that gets the lock runs crit and lets go at once, and only then hands
// the result over: the hand-over (waking the caller, perhaps on another
// thread) stays outside the critical section, which on a hot key is the
// throughput. If the caller gives up first, the goroutine is left to
// finish alone: it releases the lock if it ever gets it, never runs crit,
// and closes fd. The caller has counted the goroutine in blockedWaiters.
func (s *Store) waitBlocked(ctx context.Context, fd int, name string, crit func() error) error {
	const waiting, running, abandoned = 0, 1, 2
	var state atomic.Int32
	result := make(chan error, 1)
	go func() {
		defer s.blockedWaiters.Add(-1)
		err := flock(fd, lockExclusive, true)
		if !state.CompareAndSwap(waiting, running) { // the caller gave up
			if err == nil {
				funlock(fd)
			}
			closeFD(fd)
			return
		}
		result <- s.locked(fd, name, err, crit)
	}()
	timer := time.NewTimer(s.lockWait)
	defer timer.Stop()
	var giveUp error
	select {
	case err := <-result:
		return err
	case <-timer.C:
		giveUp = fmt.Errorf("%w (%v)", ErrLockTimeout, s.lockWait)
	case <-ctx.Done():
		giveUp = fmt.Errorf("waiting for the lock: %w", ctx.Err())
	}
	if state.CompareAndSwap(waiting, abandoned) {
		return fmt.Errorf("lock %s: %w", s.pathOf(name), giveUp)
	}
	return <-result // the lock came just in time: the hit is done
}

// !-withlock

// lockWithin takes a flock(2) of kind on fd, waiting at most wait, or
// until ctx ends, by polling with a non-blocking flock, backing off from
// 20µs to 250µs. WaitForever blocks instead, ignoring ctx.
func lockWithin(ctx context.Context, fd int, kind lockKind, wait time.Duration) error {
	if wait == WaitForever {
		return flock(fd, kind, true)
	}
	var deadline time.Time
	delay := 20 * time.Microsecond
	for {
		err := flock(fd, kind, false)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, errWouldBlock):
			return fmt.Errorf("flock: %w", err)
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(wait)
		}
		if !now.Before(deadline) {
			return fmt.Errorf("%w (%v)", ErrLockTimeout, wait)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for the lock: %w", err)
		}
		time.Sleep(min(delay, deadline.Sub(now)))
		delay = min(2*delay, 250*time.Microsecond)
	}
}
