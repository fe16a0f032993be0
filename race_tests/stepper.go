//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/childproc"
)

// A stepper is a child that takes one operation at a time on a state
// file — a hit, a sweep, a reset — one system call per step, each granted
// by the parent: before a step it prints "next STEP KEY" and waits for
// "go" (or "abort", which closes what it holds). KEY is "lock:INODE" for
// a step that takes a flock(2) lock, so that the parent knows which file
// it would wait for; "release" for a step that lets one go; "restart" for
// the first step after the operation started over (closing, and so
// unlocking, everything); "-" else. An operation ends with "done RESULT",
// holding nothing.
type stepper struct {
	in         *bufio.Reader
	path, lock string // the state file, and the lock file of the lock-file variant
	fd, lockFd int    // -1 when closed
	state      algorithm.Fixed
	oldLen     int
	next       []byte
	result     string
}

var errAborted = errors.New("aborted")

// stepperChild runs operations as the parent names them, one per line:
// "VARIANT OP", until stdin closes.
func stepperChild(path string, in *bufio.Reader) error {
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			return nil // the parent is done
		}
		variant, op, _ := strings.Cut(strings.TrimSpace(line), " ")
		s := &stepper{in: in, path: path, lock: path + ".lock", fd: -1, lockFd: -1}
		steps, ok := protocols[variant][op]
		if !ok {
			return fmt.Errorf("no operation %q in variant %q", op, variant)
		}
		err = s.run(steps)
		s.closeAll()
		switch {
		case errors.Is(err, errAborted):
			childproc.Say("aborted")
		case err != nil:
			return err
		default:
			childproc.Say("done %s", s.result)
		}
	}
}

// run takes the steps in turn; a step that returns errRestart starts the
// operation over from its first step, as the store does when a sweep
// removed the file it waited on.
func (s *stepper) run(steps []step) error {
	restarted := false
	for i := 0; i < len(steps); i++ {
		st := steps[i]
		if st.skip != nil && st.skip(s) {
			continue
		}
		if err := s.announce(st, restarted); err != nil {
			return err
		}
		restarted = false
		err := st.do(s)
		if errors.Is(err, errDone) {
			return nil
		}
		if errors.Is(err, errRestart) {
			s.closeAll() // which lets every lock go
			i, restarted = -1, true
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}

// announce says which step comes next and waits for the parent's go; a
// step after a restart says so, as the restart let every lock go.
func (s *stepper) announce(st step, restarted bool) error {
	key := "-"
	switch {
	case restarted:
		key = "restart"
	case st.locks != nil:
		var sb syscall.Stat_t
		if err := syscall.Fstat(*st.locks(s), &sb); err != nil {
			return err
		}
		key = fmt.Sprintf("lock:%d", sb.Ino)
	case st.releases:
		key = "release"
	}
	childproc.Say("next %s %s", st.name, key)
	line, err := s.in.ReadString('\n')
	if err != nil || strings.TrimSpace(line) == "abort" {
		return errAborted
	}
	return nil
}

func (s *stepper) closeAll() {
	for _, fd := range []*int{&s.fd, &s.lockFd} {
		if *fd >= 0 {
			syscall.Close(*fd)
			*fd = -1
		}
	}
}
