//go:build unix

// Package procstop stops processes with SIGSTOP, as a server that hangs —
// or a machine that freezes — stops, and waits until the stop has taken
// effect: kill(2) returns before it does, and a request sent in between
// would still be answered.
package procstop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
)

// Stop stops pids (SIGSTOP), in order, and waits until every thread of
// each is stopped. It returns what resumes them (SIGCONT).
func Stop(pids []int) (resume func() error, err error) {
	signal := func(sig syscall.Signal) error {
		var errs []error
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	if err := signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("procstop: %w", err)
	}
	resume = func() error { return signal(syscall.SIGCONT) }
	if err := poll.Until(10*time.Second, time.Millisecond, func() error { return stopped(pids) }); err != nil {
		resume()
		return nil, fmt.Errorf("procstop: %w", err)
	}
	return resume, nil
}

// stopped reports an error unless every thread of pids is stopped (state
// T in /proc/PID/task/TID/stat), gone, or a zombie (Z, X): a process that
// exited and that its stopped parent cannot reap runs nothing either.
// Where there is no /proc, it cannot tell, and says nothing.
func stopped(pids []int) error {
	for _, pid := range pids {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		for _, st := range tasks {
			if state, _, ok := procStat(st); ok && !strings.Contains("TtZX", state) {
				return fmt.Errorf("%s is in state %s", st, state)
			}
		}
	}
	return nil
}

// Family returns pid and its children's pids, read from /proc.
func Family(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return nil, errors.New("procstop: no /proc to find a process's children in")
	}
	pids := []int{pid}
	for _, st := range stats {
		if _, ppid, ok := procStat(st); ok && ppid == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			pids = append(pids, child)
		}
	}
	return pids, nil
}

// procStat reads a /proc stat file — pid (comm) state ppid … — and
// returns the state and the parent's pid; ok is false if it is gone. comm
// may hold spaces and parentheses, so the fields are counted from the
// last ')'.
func procStat(path string) (state, ppid string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", false
	}
	fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(fields) < 2 {
		return "", "", false
	}
	return fields[0], fields[1], true
}
