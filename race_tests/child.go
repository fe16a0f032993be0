//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/lab/stress"
)

// The children's roles. Each prints what it did, line by line, and waits
// on stdin where a choreography needs to hold it still.
const (
	roleCounter   = "race/counter"    // one BrokenCounter hit, pausing where told
	roleStress    = "race/stress"     // many hits after a go-ahead
	roleLockHold  = "race/lock-hold"  // hold a lock file; release (and maybe unlink) on go
	roleLockWait  = "race/lock-wait"  // open a lock file, then block in flock
	roleLockTry   = "race/lock-try"   // try a lock once, without waiting
	roleHoldState = "race/hold-state" // hold a state file's lock until killed
	roleStoreHit  = "race/store-hit"  // one fixed_filestore hit
	roleStepper   = "race/stepper"    // operations one system call at a time (schedules)
)

// Window is the window every child counts in, at the fixed instant
// demoNow, so that no window ends during a demonstration.
const Window = time.Hour

func demoNow() time.Time { return time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC) }

// Roles are this package's child roles, for childproc.RunIfChild: one
// short function per role, each given the file it works on
// (RATELAB_RACE_PATH) and its stdin. Each prints what it did, line by
// line, and waits on stdin where a choreography needs to hold it still.
func Roles() childproc.Roles {
	return childproc.Roles{
		roleCounter:   onPath(counterChild),
		roleStress:    onPath(stressChild),
		roleLockHold:  onPath(lockHoldChild),
		roleLockWait:  onPath(lockWaitChild),
		roleLockTry:   onPath(lockTryChild),
		roleHoldState: onPath(holdStateChild),
		roleStoreHit:  onPath(storeHitChild),
		roleStepper:   onPath(stepperChild),
	}
}

// onPath adapts a role body to childproc.Roles: it reads the path every
// role works on and hands over stdin, where the go-aheads arrive.
func onPath(run func(path string, stdin *bufio.Reader) error) func() error {
	return func() error {
		path := os.Getenv("RATELAB_RACE_PATH")
		if path == "" {
			return fmt.Errorf("RATELAB_RACE_PATH is not set")
		}
		return run(path, bufio.NewReader(os.Stdin))
	}
}

// counterChild makes one BrokenCounter hit, reporting what it read and
// pausing after the read or mid-write as RATELAB_RACE_PAUSE says.
func counterChild(path string, stdin *bufio.Reader) error {
	pause := os.Getenv("RATELAB_RACE_PAUSE")
	c := &BrokenCounter{Path: path, Lock: os.Getenv("RATELAB_RACE_LOCK") == "1"}
	if os.Getenv("RATELAB_RACE_ORDER") == TruncateFirst.String() {
		c.Order = TruncateFirst
	}
	c.AfterRead = func(n int64) {
		childproc.Say("read count=%d", n)
		if pause == "after-read" {
			childproc.WaitGo(stdin)
		}
	}
	c.MidWrite = func() {
		if pause == "mid-write" {
			childproc.Say("mid-write")
			childproc.WaitGo(stdin)
		}
	}
	if c.Lock {
		childproc.Say("locking")
	}
	st, err := c.HitAt(demoNow())
	if err != nil {
		return err
	}
	childproc.Say("result count=%d", st.Count)
	return nil
}

// stressChild makes RATELAB_RACE_HITS hits of RATELAB_RACE_MODE after a
// go-ahead.
func stressChild(path string, _ *bufio.Reader) error {
	hits, err := strconv.Atoi(os.Getenv("RATELAB_RACE_HITS"))
	if err != nil {
		return fmt.Errorf("RATELAB_RACE_HITS: %w", err)
	}
	hit, err := stressHitter(os.Getenv("RATELAB_RACE_MODE"), path)
	if err != nil {
		return err
	}
	return stress.Hit(hits, hit)
}

// lockHoldChild holds a lock file until told, then releases it and, with
// RATELAB_RACE_UNLINK=1, removes the file: the pitfall.
func lockHoldChild(path string, stdin *bufio.Reader) error {
	l := flock.New(path)
	if err := l.Lock(); err != nil {
		return err
	}
	childproc.Say("locked inode=%d", pathInode(path))
	childproc.WaitGo(stdin)
	if err := l.Unlock(); err != nil {
		return err
	}
	if os.Getenv("RATELAB_RACE_UNLINK") == "1" {
		// The pitfall: "clean up" the lock file after unlocking.
		if err := os.Remove(path); err != nil {
			return err
		}
	}
	childproc.Say("released")
	childproc.WaitGo(stdin)
	return nil
}

// lockWaitChild opens a lock file, says which inode it opened, then
// blocks in flock and says which inode it locked.
func lockWaitChild(path string, stdin *bufio.Reader) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	childproc.Say("opened inode=%d", inode(f))
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	childproc.Say("locked inode=%d", inode(f))
	childproc.WaitGo(stdin)
	return nil
}

// lockTryChild tries a lock once, without waiting, and says whether it
// got it.
func lockTryChild(path string, stdin *bufio.Reader) error {
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return err
	}
	if ok {
		childproc.Say("locked inode=%d", pathInode(path))
	} else {
		childproc.Say("busy")
	}
	childproc.WaitGo(stdin)
	return l.Unlock()
}

// holdStateChild holds a state file's lock until killed.
func holdStateChild(path string, stdin *bufio.Reader) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	childproc.Say("locked")
	childproc.WaitGo(stdin) // until killed
	return nil
}

// storeHitChild makes one fixed_filestore hit on RATELAB_RACE_KEY, with a
// bounded wait, fail-closed, if RATELAB_RACE_WAIT is set.
func storeHitChild(path string, _ *bufio.Reader) error {
	opts, err := storeHitOptions(os.Getenv("RATELAB_RACE_WAIT"))
	if err != nil {
		return err
	}
	s, err := fixedfilestore.New(path, opts)
	if err != nil {
		return err
	}
	h, err := s.TakeAt(context.Background(), CountRule(), os.Getenv("RATELAB_RACE_KEY"), demoNow())
	if errors.Is(err, ratelab.ErrUnavailable) {
		childproc.Say("result busy")
		return nil
	}
	if err != nil {
		return err
	}
	childproc.Say("result count=%d", CountRule().Limit-h.Remaining)
	return nil
}

// storeHitOptions are the file store's options for a wait of w: the
// defaults if w is empty, else a bounded wait of w.
func storeHitOptions(w string) (fixedfilestore.Options, error) {
	opts := fixedfilestore.Options{}
	if w == "" {
		return opts, nil
	}
	wait, err := time.ParseDuration(w)
	if err != nil {
		return opts, fmt.Errorf("RATELAB_RACE_WAIT: %w", err)
	}
	opts.LockWait = wait
	return opts, nil
}

// stressHitter returns one lock-free hit of the given kind on path; the
// flock mode's hitters are package stress's.
func stressHitter(mode, path string) (func() error, error) {
	switch mode {
	case "lock-free":
		c := &BrokenCounter{Path: path}
		return func() error { _, err := c.HitAt(demoNow()); return err }, nil
	case "lock-free-truncate-first":
		c := &BrokenCounter{Path: path, Order: TruncateFirst}
		return func() error { _, err := c.HitAt(demoNow()); return err }, nil
	case "recorded-lock-free", "recorded-flock":
		return recordedHitter(path, mode == "recorded-flock")
	}
	return nil, fmt.Errorf("unknown stress mode %q", mode)
}

// StressKey is the one hot key every stress process hits; under Rule its
// state key is the original's "demo-start:ip:203.0.113.7".
const StressKey = "ip:203.0.113.7"

// CountRule is the rule every child counts under: the original's name and
// window, with a limit no demonstration reaches, so that a count can be
// read back from any decision as Limit − Remaining.
func CountRule() ratelab.Rule {
	return ratelab.Rule{Name: "demo-start", Limit: ratelab.MaxLimit, Window: Window}.Normalized()
}

// inode is the inode number of an open file, or 0 if it cannot be read:
// which file a descriptor, and so its lock, is on.
func inode(f *os.File) uint64 {
	var st syscall.Stat_t
	if f == nil || syscall.Fstat(int(f.Fd()), &st) != nil {
		return 0
	}
	return uint64(st.Ino)
}

// pathInode is the inode number at path now, or 0: for a lock taken
// through gofrs/flock, which keeps its descriptor to itself, the file at
// the path right after locking is the file locked.
func pathInode(path string) uint64 {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return 0
	}
	return uint64(st.Ino)
}
