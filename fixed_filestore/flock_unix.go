//go:build linux || darwin

package fixedfilestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
)

const oNoFollow = syscall.O_NOFOLLOW

func supported() error { return nil }

// update performs one locked read-modify-write of the state at path and
// returns the new state. It speaks to the kernel directly — open, flock,
// fstat, lstat, pread, pwrite, flock, close — so each step is one system
// call that the package documentation can name.
func (s *Store) update(path string, now time.Time, window time.Duration) (ratelab.Hit, error) {
	for range maxReopen {
		fd, err := s.openLocked(path)
		if errors.Is(err, errReplaced) {
			continue
		}
		if err != nil {
			return ratelab.Hit{}, err
		}
		return s.readModifyWrite(fd, path, now, window)
	}
	return ratelab.Hit{}, fmt.Errorf("state file was removed %d times while waiting for its lock", maxReopen)
}

// openLocked opens path create-without-truncate, locks it and checks that
// the locked file is still the one at path. It returns errReplaced if a
// sweep removed the file before the lock was taken.
func (s *Store) openLocked(path string) (int, error) {
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
	if err := lockWithin(fd, s.lockWait); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	var held, cur syscall.Stat_t
	if err := syscall.Fstat(fd, &held); err != nil {
		unlockClose(fd)
		return -1, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if held.Mode&syscall.S_IFMT != syscall.S_IFREG {
		unlockClose(fd)
		return -1, fmt.Errorf("%s is not a regular file", path)
	}
	if err := syscall.Lstat(path, &cur); err != nil || cur.Dev != held.Dev || cur.Ino != held.Ino {
		unlockClose(fd)
		return -1, errReplaced
	}
	return fd, nil
}

// !+open
// openState opens path read-write, creating it 0600 if absent, never
// truncating it and never following a symlink: the original's "c+" mode.
func openState(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
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
func (s *Store) readModifyWrite(fd int, path string, now time.Time, window time.Duration) (ratelab.Hit, error) {
	defer unlockClose(fd)

	var old [maxStateSize + 1]byte
	n, err := pread(fd, old[:])
	if err != nil {
		return ratelab.Hit{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	var buf [96]byte
	h, out := s.next(buf[:0], old[:n], path, now, window)
	// Write in place, then cut off what is left of a longer old state. The
	// file never passes through zero length (a reader without the lock
	// would see no state and restart the window), and ext4 does not flush
	// it on close as it does after a truncate to zero.
	if _, err := syscall.Pwrite(fd, out, 0); err != nil {
		return ratelab.Hit{}, &fs.PathError{Op: "write", Path: path, Err: err}
	}
	if len(out) < n {
		if err := syscall.Ftruncate(fd, int64(len(out))); err != nil {
			return ratelab.Hit{}, &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	return h, nil
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

// lockWithin takes an exclusive flock(2) on fd, waiting at most wait.
//
// A blocking flock cannot be given a deadline, so after a first
// non-blocking attempt it polls, backing off from 20µs to 250µs: a holder
// keeps the lock for some microseconds, so most waits end in the first few
// polls, and a hung holder costs a waiter at most wait. With 8 processes on
// one key this keeps within a few percent of a blocking flock's
// throughput; a 2ms cap cost about 15% (race_tests' stress run).
func lockWithin(fd int, wait time.Duration) error {
	return lockWithinMode(fd, syscall.LOCK_EX, wait)
}

func lockWithinMode(fd, mode int, wait time.Duration) error {
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

// readShared reads the state file at path under a shared lock, so that it
// never sees a write half done, waiting at most wait for the lock.
func readShared(path string, wait time.Duration) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink: refusing to follow it", path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	if err := lockWithinMode(fd, syscall.LOCK_SH, wait); err != nil {
		return nil, err
	}
	defer unlock(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	buf := make([]byte, maxStateSize+1)
	n, err := pread(fd, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:n], nil
}
