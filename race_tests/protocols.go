//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/ratelab/ratelab/algorithm"
)

// A step is one system call of an operation.
type step struct {
	name     string
	do       func(*stepper) error
	locks    func(*stepper) *int // the descriptor a lock step locks
	releases bool                // the step lets a lock go
	skip     func(*stepper) bool // the step is not needed this time
}

var (
	errRestart = errors.New("the file was removed while this operation waited: start over")
	errDone    = errors.New("nothing left to do")
)

// The steps, each the system call fixed_filestore makes at that point.
var (
	open = step{name: "open", do: func(s *stepper) (err error) {
		s.fd, err = syscall.Open(s.path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
		return err
	}}
	openExisting = step{name: "open", do: func(s *stepper) (err error) {
		s.fd, err = syscall.Open(s.path, syscall.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ENOENT) {
			s.result = "gone"
			return errDone
		}
		return err
	}}
	lock  = step{name: "flock", do: func(s *stepper) error { return flockNow(s.fd) }, locks: func(s *stepper) *int { return &s.fd }}
	check = step{name: "fstat", do: func(s *stepper) error { // the store's checkHeld: a removed file is not the state
		var st syscall.Stat_t
		if err := syscall.Fstat(s.fd, &st); err != nil {
			return err
		}
		if st.Nlink == 0 {
			return errRestart
		}
		return nil
	}}
	read = step{name: "read", do: func(s *stepper) error {
		buf := make([]byte, 128)
		n, err := syscall.Pread(s.fd, buf, 0)
		if err != nil {
			return err
		}
		s.oldLen = n
		s.state, err = algorithm.DecodeFixed(buf[:n])
		if err != nil {
			s.state = algorithm.Fixed{} // an empty or torn state is a new window, as the original reads it
		}
		next, _, err := s.state.Take(CountRule(), demoNow())
		s.next, s.result = next.Append(nil), fmt.Sprintf("told=%d", next.Count)
		return err
	}}
	write    = step{name: "write", do: func(s *stepper) error { _, err := syscall.Pwrite(s.fd, s.next, 0); return err }}
	truncate = step{name: "ftruncate", do: func(s *stepper) error { return syscall.Ftruncate(s.fd, int64(len(s.next))) },
		skip: func(s *stepper) bool { return len(s.next) >= s.oldLen }}
	truncateFirst = step{name: "ftruncate-0", do: func(s *stepper) error { return syscall.Ftruncate(s.fd, 0) }}
	closeState    = step{name: "close", do: func(s *stepper) error { return closeFd(&s.fd) }, releases: true}
	closeUnlocked = step{name: "close", do: func(s *stepper) error { return closeFd(&s.fd) }}
	writeTemp     = step{name: "write-temp", do: func(s *stepper) error {
		fd, err := syscall.Open(s.path+".tmp", syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		defer syscall.Close(fd)
		_, err = syscall.Write(fd, s.next)
		return err
	}}
	rename   = step{name: "rename", do: func(s *stepper) error { return syscall.Rename(s.path+".tmp", s.path) }}
	openLock = step{name: "open-lock", do: func(s *stepper) (err error) {
		s.lockFd, err = syscall.Open(s.lock, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
		return err
	}}
	lockLock   = step{name: "flock-lock", do: func(s *stepper) error { return flockNow(s.lockFd) }, locks: func(s *stepper) *int { return &s.lockFd }}
	unlockLock = step{name: "unlock-lock", do: func(s *stepper) error { return syscall.Flock(s.lockFd, syscall.LOCK_UN) }, releases: true}
	unlinkLock = step{name: "unlink-lock", do: func(s *stepper) error {
		if err := syscall.Unlink(s.lock); !errors.Is(err, syscall.ENOENT) { // another process removed it first
			return err
		}
		return nil
	}}
	closeLock = step{name: "close-lock", do: func(s *stepper) error { return closeFd(&s.lockFd) }}
	// sweepDecide and unlink are a sweep's: remove the state if its window is over.
	sweepDecide = step{name: "read", do: func(s *stepper) error {
		if err := read.do(s); err != nil {
			return err
		}
		if s.state.ResetAt > demoNow().Unix() {
			s.result = "kept"
			return errDone
		}
		return nil
	}}
	unlink     = step{name: "unlink", do: func(s *stepper) error { s.result = "removed"; return syscall.Unlink(s.path) }}
	checkReset = step{name: "fstat", do: func(s *stepper) error { // a reset or sweep of a removed file has nothing left to do
		if err := check.do(s); errors.Is(err, errRestart) {
			s.result = "gone"
			return errDone
		} else if err != nil {
			return err
		}
		return nil
	}}
)

// !+steps

// storeHit is fixed_filestore's hit, system call by system call (see
// fixed_filestore/hit.go): open without truncating, lock, check that the
// file is still the state, read, decide, write in place, truncate only a
// shorter state, close (which unlocks).
var storeHit = []step{open, lock, check, read, write, truncate, closeState}

// protocols are the variants the schedules explore: each a store's
// operations as lists of steps.
var protocols = map[string]map[string][]step{
	"store":          {"hit": storeHit},
	"no-lock":        {"hit": {open, read, write, truncate, closeUnlocked}},
	"truncate-first": {"hit": {open, read, truncateFirst, write, closeUnlocked}},
	"rename":         {"hit": {open, lock, read, writeTemp, rename, closeState}},
	"lock-file-unlinked": {"hit": {openLock, lockLock, open, read, write, truncate, closeUnlocked,
		unlockLock, unlinkLock, closeLock}},
	"store-sweep": {"hit": storeHit, "sweep": {openExisting, lock, checkReset, sweepDecide, unlink, closeState}},
	"sweep-unchecked": {"hit": {open, lock, read, write, truncate, closeState},
		"sweep": {openExisting, lock, checkReset, sweepDecide, unlink, closeState}},
	"store-reset": {"hit": storeHit, "reset": {openExisting, lock, checkReset, unlink, closeState}},
}

// !-steps

// flockNow takes the lock the parent granted: never waiting, since the
// parent grants a lock step only when no other process holds the file.
// The kernel refusing it means the parent's view of the locks is wrong.
func flockNow(fd int) error {
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return fmt.Errorf("the kernel refused a lock the schedule thought free: %w", err)
	}
	return nil
}

func closeFd(fd *int) error {
	err := syscall.Close(*fd)
	*fd = -1
	return err
}
