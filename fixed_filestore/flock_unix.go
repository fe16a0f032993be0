//go:build linux || darwin

package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

const oNoFollow = syscall.O_NOFOLLOW

func supported() error { return nil }

// update performs one locked read-modify-write of the state at path and
// returns the decision. It speaks to the kernel directly — open, flock,
// fstat, lstat, pread, pwrite, flock, close — so each step is one system
// call that the package documentation can name.
func (s *Store) update(ctx context.Context, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	for range maxReopen {
		fd, err := s.openLocked(ctx, path)
		if errors.Is(err, errReplaced) {
			continue
		}
		if err != nil {
			return ratelab.Decision{}, err
		}
		return s.readModifyWrite(fd, path, r, now)
	}
	return ratelab.Decision{}, fmt.Errorf("%s was removed %d times while this hit waited for its lock", path, maxReopen)
}

// !+locked
// openLocked opens path create-without-truncate, locks it and checks that
// the locked file is still the one at path. It returns errReplaced if a
// sweep removed the file before the lock was taken.
func (s *Store) openLocked(ctx context.Context, path string) (int, error) {
	fd, err := openState(path)
	if errors.Is(err, fs.ErrNotExist) {
		// The state directory vanished (someone cleaned var/): recreate it,
		// but not its parents; a missing base directory is a failure.
		if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return -1, fmt.Errorf("recreate state directory: %w", err)
		}
		fd, err = openState(path)
	}
	if err != nil {
		return -1, err
	}
	if s.testHookOpened != nil {
		s.testHookOpened()
	}
	if given, err := s.lockExclusive(ctx, fd); err != nil {
		if !given {
			syscall.Close(fd)
		}
		return -1, fmt.Errorf("lock %s: %w", path, err)
	}
	held, err := fstatRegular(fd, path)
	if err != nil {
		unlockClose(fd)
		return -1, err
	}
	var cur syscall.Stat_t
	if err := syscall.Lstat(path, &cur); err != nil || cur.Dev != held.Dev || cur.Ino != held.Ino {
		unlockClose(fd)
		return -1, errReplaced
	}
	return fd, nil
}

// !-locked

// !+open
// openState opens path read-write, creating it 0600 if absent, never
// truncating it and never following a symlink: the original's "c+" mode.
func openState(path string) (int, error) {
	return openNoFollow(path, syscall.O_RDWR|syscall.O_CREAT, 0o600)
}

// openNoFollow opens path with flags plus O_NOFOLLOW and O_CLOEXEC,
// retrying when interrupted, and says so plainly when path is a symlink.
func openNoFollow(path string, flags int, perm uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, perm)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ELOOP):
			return -1, fmt.Errorf("%s is a symlink: refusing to follow it", path)
		}
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
}

// !-open

// !+rmw
// readModifyWrite applies one hit to the locked file, then unlocks and
// closes it, whatever happens.
func (s *Store) readModifyWrite(fd int, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	defer unlockClose(fd)

	var small [256]byte
	old := small[:]
	if n := algorithm.MaxStateSize(r) + 1; n > len(old) {
		old = make([]byte, n)
	}
	n, err := pread(fd, old)
	if err != nil {
		return ratelab.Decision{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	var buf [256]byte
	res, err := s.step(buf[:0], old[:n], path, r, now)
	if err != nil || res.State == nil {
		return res.Decision, err // refused and not recorded: nothing to write
	}
	// Write in place, then cut off what is left of a longer old state. The
	// file never passes through zero length (a reader without the lock
	// would see no state and restart the window), and ext4 does not flush
	// it on close as it does after a truncate to zero.
	if _, err := syscall.Pwrite(fd, res.State, 0); err != nil {
		return ratelab.Decision{}, &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if len(res.State) < n {
		if err := syscall.Ftruncate(fd, int64(len(res.State))); err != nil {
			return ratelab.Decision{}, &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	return res.Decision, nil
}

// !-rmw

// pread reads from offset 0 until buf is full or the file ends.
func pread(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Pread(fd, buf[n:], int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, nil
		}
		n += m
	}
	return n, nil
}

// lockExclusive takes an exclusive flock(2) on fd, waiting at most
// s.lockWait.
//
// A blocking flock(2) cannot be given a deadline, and polling with a
// non-blocking one wakes late and costs hot-key throughput when many
// processes share few cores. So after two non-blocking attempts 20µs apart
// (a holder keeps the lock for microseconds, so many waits end there), a
// goroutine waits in a blocking flock(2) — the kernel wakes it the moment
// the holder lets go — while the caller waits at most s.lockWait for it.
// If the wait runs out, the goroutine is left to finish on its own: from
// then on it owns fd, releases the lock if it ever gets it, and closes fd.
// given reports that hand-over; the caller must then not touch fd. When
// maxBlockedWaiters goroutines are already waiting (a hung holder with
// heavy traffic), the caller polls instead.
func (s *Store) lockExclusive(ctx context.Context, fd int) (given bool, err error) {
	if s.lockWait == WaitForever {
		return false, lockWithinMode(context.Background(), fd, syscall.LOCK_EX, WaitForever)
	}
	// Short waits, the common case, end in a second try.
	for try := range 2 {
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return false, err
		}
		if try == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	if s.blockedWaiters.Add(1) > maxBlockedWaiters {
		s.blockedWaiters.Add(-1)
		return false, lockWithinMode(ctx, fd, syscall.LOCK_EX, s.lockWait)
	}
	const waiting, done, abandoned = 0, 1, 2
	var state atomic.Int32
	result := make(chan error, 1)
	go func() {
		defer s.blockedWaiters.Add(-1)
		err := lockWithinMode(context.Background(), fd, syscall.LOCK_EX, WaitForever)
		if state.CompareAndSwap(waiting, done) {
			result <- err
			return
		}
		// The caller gave up and left fd to us.
		if err == nil {
			unlock(fd)
		}
		syscall.Close(fd)
	}()
	timer := time.NewTimer(s.lockWait)
	defer timer.Stop()
	var giveUp error
	select {
	case err := <-result:
		return false, err
	case <-timer.C:
		giveUp = fmt.Errorf("%w (%v)", ErrLockTimeout, s.lockWait)
	case <-ctx.Done():
		giveUp = fmt.Errorf("waiting for the lock: %w", ctx.Err())
	}
	if state.CompareAndSwap(waiting, abandoned) {
		return true, giveUp
	}
	return false, <-result // the lock came just in time
}

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

// fstatRegular stats fd and refuses anything but a regular file (a FIFO
// would block the read; a device is not ours to write).
func fstatRegular(fd int, path string) (syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return st, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return st, fmt.Errorf("%s is not a regular file", path)
	}
	return st, nil
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

// readShared reads the state file at path under a shared lock, so that it
// never sees a write half done, waiting at most wait for the lock.
func readShared(path string, wait time.Duration) ([]byte, error) {
	fd, err := openNoFollow(path, syscall.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	if err := lockWithinMode(context.Background(), fd, syscall.LOCK_SH, wait); err != nil {
		return nil, err
	}
	defer unlock(fd)
	if _, err := fstatRegular(fd, path); err != nil {
		return nil, err
	}
	buf := make([]byte, maxReadSize+1)
	n, err := pread(fd, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:n], nil
}
