package fixedfilestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// This file is one hit, top to bottom: name the file, open it, lock it,
// check what was locked, read, algorithm.Take, write, unlock. The system
// calls are the platform layer's (fd_unix.go); the lock is withLock's
// (lock.go).

// !+path

// Path returns the file holding the state of key under r: named by the
// digest of the rule's state key (ratelab.KeyDigest of r.StateKey(key)), so
// any key gives a safe, fixed-length name, and suffixed by the algorithm
// (algorithm.Suffix). The fixed window of rule "demo-start" and key
// "ip:203.0.113.7" is where the PHP original keeps key
// "demo-start:ip:203.0.113.7".
func (s *Store) Path(r ratelab.Rule, key string) string { return s.pathOf(FileName(r, key)) }

// FileName returns the name of the state file of key under r.
func FileName(r ratelab.Rule, key string) string {
	return ratelab.KeyDigest(r.StateKey(key)) + algorithm.Suffix(r.Normalized().Algorithm)
}

// fileName is FileName of a checked rule, built with one allocation: every hit names its file, and only its name — the state
// directory is a descriptor (dir.go).
func fileName(r ratelab.Rule, key string) string {
	var kb [256]byte
	sum := sha256.Sum256(append(append(append(kb[:0], r.Name...), ':'), key...))
	var nb [96]byte
	hex.Encode(nb[:sha256.Size*2], sum[:])
	return string(append(nb[:sha256.Size*2], algorithm.Suffix(r.Algorithm)...))
}

// !-path

// Take takes one hit now; it is TakeAt(ctx, r, key, clock()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	return s.TakeAt(ctx, r, key, s.now())
}

// !+takeat

// TakeAt takes one hit of key under r at now, in one locked
// read-modify-write of the state file, and decides it. r and now are
// trusted, as the ratelab.Store contract says.
//
// A state it cannot reach is an error wrapping ratelab.ErrUnavailable,
// which ratelab.WithFailPolicy decides by a policy. The lock wait ends at
// Options.LockWait or when ctx ends, whichever is first; a lock not free
// within LockWait is load, not an outage: the error wraps ratelab.ErrBusy
// (and ErrLockTimeout). A state of another rule with the same name is an
// error wrapping ratelab.ErrRuleConflict, the file left as it was; a lock
// wait that ctx ended returns ctx's error.
func (s *Store) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	name := fileName(r, key)
	d, err := s.hit(ctx, name, r, now)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, ratelab.ErrRuleConflict), errors.Is(err, ratelab.ErrUncheckedRule),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ratelab.Decision{}, fmt.Errorf("fixedfilestore: %s: %w", s.pathOf(name), err)
	case errors.Is(err, ErrLockTimeout):
		return ratelab.Decision{}, fmt.Errorf("fixedfilestore: %s: %w: %w", s.pathOf(name), ratelab.ErrBusy, err)
	}
	return ratelab.Decision{}, fmt.Errorf("fixedfilestore: %s: %w: %w", s.pathOf(name), ratelab.ErrUnavailable, err)
}

// !-takeat

// maxReopen bounds how often one hit starts over because a sweep removed
// the file it had opened. Each start over needs a whole sweep of that file
// in between, so this is never reached in practice.
const maxReopen = 8

var errReplaced = errors.New("fixedfilestore: locked file is no longer at its path")

// !+hit

// hit performs one locked read-modify-write of the state file name and
// returns the decision: open, lock, check, read, Take, write, unlock, each
// one system call that the package documentation names.
func (s *Store) hit(ctx context.Context, name string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	for range maxReopen {
		fd, err := s.open(name)
		if err != nil {
			return ratelab.Decision{}, err
		}
		var d ratelab.Decision
		err = s.withLock(ctx, fd, name, func() error {
			if err := s.checkHeld(fd, name); err != nil {
				return err
			}
			var rmwErr error
			d, rmwErr = s.readModifyWrite(fd, name, r, now)
			return rmwErr
		})
		if !errors.Is(err, errReplaced) {
			return d, err
		}
	}
	return ratelab.Decision{}, fmt.Errorf("%s was removed %d times while this hit waited for its lock", s.pathOf(name), maxReopen)
}

// !-hit

// !+open

// A state file is opened read-write, created 0600 if absent, never
// truncated (the original's "c+" mode), and never through a link:
// openAt's O_NOFOLLOW refuses a symlink at the name, and the directory
// descriptor it opens relative to refuses one in place of the directory.

// !-open

// !+locked

// open opens the state file name create-without-truncate.
func (s *Store) open(name string) (int, error) {
	fd, err := s.openFile(name, openState)
	if err == nil && s.testHookOpened != nil {
		s.testHookOpened()
	}
	return fd, err
}

// checkHeld runs under the lock: the file must be a regular file with
// exactly one name, this process's user's, and nobody else's to read or
// write (tighten). None: a sweep unlinked it while this hit waited for
// the lock, so errReplaced starts the hit over on the live file. More
// than one: a hard link to a file elsewhere, never to be written through.
// One fstat answers both, where comparing with an lstat of the path would
// cost another walk of it.
func (s *Store) checkHeld(fd int, name string) error {
	held, err := s.fstatRegular(fd, name)
	switch {
	case err != nil:
		return err
	case held.nlink == 0:
		return errReplaced
	}
	if err := s.foreign(held, name); err != nil {
		return err
	}
	return s.tighten(fd, held, 0o600, s.pathOf(name))
}

// foreign refuses a state file statted as st that has another name
// besides (a hard link to a file elsewhere) or is another account's:
// never to be written through, nor read.
func (s *Store) foreign(st fileStat, name string) error {
	switch {
	case st.nlink > 1:
		return fmt.Errorf("%s has %d hard links: refusing to use a state file through a link", s.pathOf(name), st.nlink)
	case st.uid != s.euid:
		return fmt.Errorf("%s belongs to uid %d, not to this process's (uid %d): refusing a state another account wrote", s.pathOf(name), st.uid, s.euid)
	}
	return nil
}

// !-locked

// fstatRegular stats fd and refuses anything but a regular file (a FIFO
// would block the read; a device is not ours to write).
func (s *Store) fstatRegular(fd int, name string) (fileStat, error) {
	st, err := fstat(fd)
	if err != nil {
		return st, &fs.PathError{Op: "fstat", Path: s.pathOf(name), Err: err}
	}
	if !st.regular {
		return st, fmt.Errorf("%s is not a regular file", s.pathOf(name))
	}
	return st, nil
}

// !+rmw

// readModifyWrite applies one hit to the locked file. withLock unlocks
// and closes it afterwards, whatever happens.
func (s *Store) readModifyWrite(fd int, name string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	var small [1024]byte // every state but a sliding log of over 60 instants fits
	old, err := readState(fd, small[:], algorithm.MaxStateSize(r)+1)
	if err != nil {
		return ratelab.Decision{}, &fs.PathError{Op: "read", Path: s.pathOf(name), Err: err}
	}
	var buf [1024]byte
	res, err := algorithm.Take(buf[:0], old, r, now)
	if err == nil && res.Replaced != nil {
		s.log.Warn("fixedfilestore: corrupt state replaced by a fresh one", "path", s.pathOf(name), "err", res.Replaced, "content", excerpt(old))
	}
	if err != nil || res.State == nil {
		return res.Decision, err // refused and not recorded: nothing to write
	}
	if err := s.writeState(fd, name, res.State, len(old)); err != nil {
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
func (s *Store) writeState(fd int, name string, state []byte, oldLen int) error {
	n := len(state)
	for len(state) < oldLen {
		state = append(state, ' ')
	}
	if m, err := pwrite(fd, state, 0); err != nil || m < len(state) {
		return &fs.PathError{Op: "write", Path: s.pathOf(name), Err: cmp.Or(err, io.ErrShortWrite)}
	}
	if n < oldLen {
		if testHookWritten != nil {
			testHookWritten()
		}
		if err := ftruncate(fd, int64(n)); err != nil {
			return &fs.PathError{Op: "truncate", Path: s.pathOf(name), Err: err}
		}
	}
	return nil
}

// readState reads the state in fd, at most limit bytes: into buf, or, if
// it does not fit there, into a buffer of limit bytes that it allocates.
// Every state but a long sliding log fits buf, and needs no other buffer
// and one system call.
func readState(fd int, buf []byte, limit int) ([]byte, error) {
	buf = buf[:min(limit, len(buf))]
	n, err := preadFull(fd, buf, 0)
	if err != nil || n < len(buf) || n == limit {
		return buf[:n], err
	}
	all := make([]byte, limit)
	copy(all, buf)
	m, err := preadFull(fd, all[n:], int64(n))
	return all[:n+m], err
}

// !-rmw

// testHookWritten, if set, runs after a hit wrote a padded state and
// before it truncates the file. Only a test's child process sets it: its
// parent kills it there.
var testHookWritten func()

// excerpt is at most the first 64 bytes of b for a log line, which the
// log's handler quotes (bytes that are not printable included).
func excerpt(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
