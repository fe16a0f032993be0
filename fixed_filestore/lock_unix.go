//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
)

// !+withlock

// withLock takes an exclusive flock(2) on fd, waiting at most s.lockWait
// or until ctx ends, runs crit while it holds the lock, then unlocks and
// closes fd. fd is closed whatever happens.
//
// A blocking flock(2) cannot be given a deadline, and polling with a
// non-blocking one wakes late and costs hot-key throughput when many
// processes share few cores. So after two non-blocking attempts 20µs apart
// (a holder keeps the lock for microseconds, so many waits end there), a
// goroutine waits in a blocking flock(2) — the kernel wakes it the moment
// the holder lets go — while the caller waits at most s.lockWait for it.
// The goroutine that gets the lock runs crit and lets go at once, and only
// then hands the result over: the hand-over (waking the caller, perhaps on
// another thread) stays outside the critical section, which on a hot key
// is the throughput. If the caller gives up first, the goroutine is left
// to finish alone: it releases the lock if it ever gets it, never runs
// crit, and closes fd. When maxBlockedWaiters goroutines already wait (a
// hung holder with heavy traffic), the caller polls instead.
func (s *Store) withLock(ctx context.Context, fd int, path string, crit func() (ratelab.Decision, error)) (ratelab.Decision, error) {
	locked := func(err error) (ratelab.Decision, error) {
		if err != nil {
			syscall.Close(fd)
			return ratelab.Decision{}, fmt.Errorf("lock %s: %w", path, err)
		}
		defer unlockClose(fd)
		return crit()
	}
	if s.lockWait == WaitForever {
		return locked(lockWithinMode(context.Background(), fd, syscall.LOCK_EX, WaitForever))
	}
	// Short waits, the common case, end in a second try.
	for try := range 2 {
		err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return locked(err)
		}
		if try == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	if s.blockedWaiters.Add(1) > maxBlockedWaiters {
		s.blockedWaiters.Add(-1)
		return locked(lockWithinMode(ctx, fd, syscall.LOCK_EX, s.lockWait))
	}
	type outcome struct {
		d   ratelab.Decision
		err error
	}
	const waiting, running, abandoned = 0, 1, 2
	var state atomic.Int32
	result := make(chan outcome, 1)
	go func() {
		defer s.blockedWaiters.Add(-1)
		err := lockWithinMode(context.Background(), fd, syscall.LOCK_EX, WaitForever)
		if !state.CompareAndSwap(waiting, running) { // the caller gave up
			if err == nil {
				unlock(fd)
			}
			syscall.Close(fd)
			return
		}
		d, err := locked(err)
		result <- outcome{d, err}
	}()
	timer := time.NewTimer(s.lockWait)
	defer timer.Stop()
	var giveUp error
	select {
	case o := <-result:
		return o.d, o.err
	case <-timer.C:
		giveUp = fmt.Errorf("%w (%v)", ErrLockTimeout, s.lockWait)
	case <-ctx.Done():
		giveUp = fmt.Errorf("waiting for the lock: %w", ctx.Err())
	}
	if state.CompareAndSwap(waiting, abandoned) {
		return ratelab.Decision{}, fmt.Errorf("lock %s: %w", path, giveUp)
	}
	o := <-result // the lock came just in time: the hit is done
	return o.d, o.err
}

// !-withlock

// lockWithinMode takes a flock(2) of the given mode on fd, waiting at most
// wait, or until ctx ends, by polling with a non-blocking flock, backing
// off from 20µs to 250µs. WaitForever blocks instead, ignoring ctx.
func lockWithinMode(ctx context.Context, fd, mode int, wait time.Duration) error {
	if wait == WaitForever {
		for {
			err := syscall.Flock(fd, mode)
			if !errors.Is(err, syscall.EINTR) {
				return err
			}
		}
	}
	var deadline time.Time
	delay := 20 * time.Microsecond
	for {
		err := syscall.Flock(fd, mode|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case !errors.Is(err, syscall.EWOULDBLOCK):
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

// tryLock takes an exclusive flock(2) on fd without waiting; it reports
// false if another open file holds a lock.
func tryLock(fd int) (bool, error) {
	err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return false, nil
	}
	return false, fmt.Errorf("flock: %w", err)
}

func unlock(fd int) { _ = syscall.Flock(fd, syscall.LOCK_UN) }

// unlockClose releases the lock, then closes the descriptor. Closing alone
// would release it too; unlocking first says so.
func unlockClose(fd int) {
	unlock(fd)
	syscall.Close(fd)
}
