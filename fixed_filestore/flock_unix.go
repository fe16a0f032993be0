//go:build linux || darwin

package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

const oNoFollow = syscall.O_NOFOLLOW

func supported() error { return nil }

// update performs one locked read-modify-write of the state at path and
// returns the decision. It speaks to the kernel directly — open, flock,
// fstat, pread, pwrite, flock, close — so each step is one system call
// that the package documentation can name.
func (s *Store) update(ctx context.Context, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	for range maxReopen {
		fd, err := s.open(path)
		if err != nil {
			return ratelab.Decision{}, err
		}
		d, err := s.withLock(ctx, fd, path, func() (ratelab.Decision, error) {
			if err := checkHeld(fd, path); err != nil {
				return ratelab.Decision{}, err
			}
			return s.readModifyWrite(fd, path, r, now)
		})
		if errors.Is(err, errReplaced) {
			continue
		}
		return d, err
	}
	return ratelab.Decision{}, fmt.Errorf("%s was removed %d times while this hit waited for its lock", path, maxReopen)
}

// !+locked

// open opens path create-without-truncate, recreating the state directory
// if someone removed it.
func (s *Store) open(path string) (int, error) {
	fd, err := openState(path)
	if errors.Is(err, fs.ErrNotExist) {
		// The state directory vanished (someone cleaned var/): recreate it,
		// but not its parents; a missing base directory is a failure.
		if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return -1, fmt.Errorf("recreate state directory: %w", err)
		}
		fd, err = openState(path)
	}
	if err == nil && s.testHookOpened != nil {
		s.testHookOpened()
	}
	return fd, err
}

// checkHeld runs under the lock: the file must be a regular file with
// exactly one name. None: a sweep unlinked it while this hit waited for
// the lock, so errReplaced starts the hit over on the live file. More
// than one: a hard link to a file elsewhere, never to be written through.
// One fstat answers both, where comparing with an lstat of the path would
// cost another walk of it.
func checkHeld(fd int, path string) error {
	held, err := fstatRegular(fd, path)
	switch {
	case err != nil:
		return err
	case held.Nlink == 0:
		return errReplaced
	case held.Nlink > 1:
		return fmt.Errorf("%s has %d hard links: refusing to write through a link", path, held.Nlink)
	}
	return nil
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
// readModifyWrite applies one hit to the locked file. withLock unlocks
// and closes it afterwards, whatever happens.
func (s *Store) readModifyWrite(fd int, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	var small [1024]byte // a sliding log of limit 60 fits
	old := small[:min(algorithm.MaxStateSize(r)+1, len(small))]
	if n := algorithm.MaxStateSize(r) + 1; n > len(old) {
		old = make([]byte, n)
	}
	n, err := pread(fd, old)
	if err != nil {
		return ratelab.Decision{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	var buf [1024]byte
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

// pread reads from offset 0 until buf is full or the file ends. A short
// read of a regular file is its end, so the common case is one system
// call, not a second one that returns 0.
func pread(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Pread(fd, buf[n:], int64(n))
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return n, err
		}
		n += m
		if m < len(buf[n-m:]) {
			return n, nil
		}
	}
	return n, nil
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
