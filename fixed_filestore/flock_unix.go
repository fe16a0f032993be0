//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

func supported() error { return nil }

// update performs one locked read-modify-write of the state at path and
// returns the decision. It speaks to the kernel directly — open, flock,
// fstat, pread, pwrite, flock, close — so each step is one system call
// that the package documentation can name.
func (s *Store) update(ctx context.Context, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	for range maxReopen {
		fd, err := s.open(filepath.Base(path))
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

// open opens the state file name create-without-truncate.
func (s *Store) open(name string) (int, error) {
	fd, err := s.openAt(name, syscall.O_RDWR|syscall.O_CREAT, 0o600)
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

// A state file is opened read-write, created 0600 if absent, never
// truncated (the original's "c+" mode), and never through a link:
// openAt's O_NOFOLLOW refuses a symlink at the name, and the directory
// descriptor it opens relative to refuses one in place of the directory.

// !-open

// !+rmw

// readModifyWrite applies one hit to the locked file. withLock unlocks
// and closes it afterwards, whatever happens.
func (s *Store) readModifyWrite(fd int, path string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	var small [1024]byte // every state but a sliding log of over 60 instants fits
	old, err := readState(fd, small[:], algorithm.MaxStateSize(r)+1)
	if err != nil {
		return ratelab.Decision{}, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	var buf [1024]byte
	res, err := s.step(buf[:0], old, path, r, now)
	if err != nil || res.State == nil {
		return res.Decision, err // refused and not recorded: nothing to write
	}
	if err := writeState(fd, path, res.State, len(old)); err != nil {
		return ratelab.Decision{}, err
	}
	return res.Decision, nil
}

// writeState writes state over the old state, of oldLen bytes, in place.
// The file never passes through zero length (a reader without the lock
// would see no state and restart the window), and ext4 does not flush it
// on close as it does after a truncate to zero.
//
// A shorter state is padded with spaces, JSON whitespace that every
// decoder reads as the end of the state, to the old length in the same
// write, and only then is the file truncated to it: a hit killed between
// the two leaves the new state, padded, never the new state followed by
// the torn tail of the old one. Most writes are as long as the old state
// or longer, and write state alone.
//
// What the write itself does under SIGKILL is Linux's: its buffered write
// (generic_perform_write in mm/filemap.c, which ext4 and tmpfs use)
// checks for a fatal signal before each page-sized chunk it copies, not
// within one, so a write of at most a page at offset 0 lands whole or not
// at all. Every write is under a page (4096 bytes) unless a sliding log
// holds, or held, more than about 290 instants: such a write a kill
// between its pages can still tear, padded or not. Nothing here is about
// power loss: the store never fsyncs.
func writeState(fd int, path string, state []byte, oldLen int) error {
	n := len(state)
	if n < oldLen {
		state = append(state, make([]byte, oldLen-n)...)
		for i := n; i < oldLen; i++ {
			state[i] = ' '
		}
	}
	if m, err := syscall.Pwrite(fd, state, 0); err != nil || m < len(state) {
		return &fs.PathError{Op: "write", Path: path, Err: cmp.Or(err, io.ErrShortWrite)}
	}
	if n < oldLen {
		if testHookWritten != nil {
			testHookWritten()
		}
		if err := syscall.Ftruncate(fd, int64(n)); err != nil {
			return &fs.PathError{Op: "truncate", Path: path, Err: err}
		}
	}
	return nil
}

// testHookWritten, if set, runs after a hit wrote a padded state and
// before it truncates the file. Only a test's child process sets it: its
// parent kills it there.
var testHookWritten func()

// readState reads the state in fd, at most limit bytes: into buf, or, if
// it does not fit there, into a buffer of limit bytes that it allocates.
// Every state but a long sliding log fits buf, and needs no other buffer
// and one system call.
func readState(fd int, buf []byte, limit int) ([]byte, error) {
	buf = buf[:min(limit, len(buf))]
	n, err := pread(fd, buf)
	if err != nil || n < len(buf) || n == limit {
		return buf[:n], err
	}
	all := make([]byte, limit)
	copy(all, buf)
	m, err := preadAt(fd, all[n:], int64(n))
	return all[:n+m], err
}

// !-rmw

// pread reads from offset 0 until buf is full or the file ends.
func pread(fd int, buf []byte) (int, error) { return preadAt(fd, buf, 0) }

// preadAt reads from offset off until buf is full or the file ends. A
// short read of a regular file is its end, so the common case is one
// system call, not a second one that returns 0.
func preadAt(fd int, buf []byte, off int64) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := syscall.Pread(fd, buf[n:], off+int64(n))
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

// readShared reads the state file name under a shared lock, so that it
// never sees a write half done, waiting at most wait for the lock. It
// opens without blocking (a FIFO planted in the directory cannot hang it)
// and refuses anything but a regular file before it reads.
func (s *Store) readShared(name string, wait time.Duration) ([]byte, error) {
	fd, err := s.openAt(name, syscall.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	path := filepath.Join(s.dir, name)
	if _, err := fstatRegular(fd, path); err != nil {
		return nil, err
	}
	if err := lockWithinMode(context.Background(), fd, syscall.LOCK_SH, wait); err != nil {
		return nil, err
	}
	defer unlock(fd)
	buf := make([]byte, maxReadSize+1)
	n, err := pread(fd, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	return buf[:n], nil
}
