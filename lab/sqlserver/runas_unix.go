//go:build unix

package sqlserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
)

// runAs makes cmd run as a's user and group.
func runAs(cmd *exec.Cmd, a *account) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid}}
}

// Pause stops every process of the server with SIGSTOP, as a server that
// hangs — or a machine that freezes — stops: connections stay open, and
// what clients send waits in the kernel's buffers. It returns what
// resumes them (SIGCONT). PostgreSQL's backends leave the server's
// process group (each calls setsid), so they are found as its children,
// in /proc: Pause works where /proc does.
func (s *Server) Pause() (resume func() error, err error) {
	pids, err := family(s.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("sqlserver: pause: %w", err)
	}
	signal := func(sig syscall.Signal) error {
		var errs []error
		for _, pid := range pids {
			if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	// The server first, so that it starts no process after the list.
	if err := signal(syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("sqlserver: pause: %w", err)
	}
	resume = func() error { return signal(syscall.SIGCONT) }
	// kill returns before the stop takes effect: wait until every thread
	// of every process is stopped, so that nothing sent from now on is
	// read before resume.
	if err := poll.Until(10*time.Second, time.Millisecond, func() error { return stopped(pids) }); err != nil {
		resume()
		return nil, fmt.Errorf("sqlserver: pause: %w", err)
	}
	return resume, nil
}

// stopped reports an error unless every thread of pids is stopped (state
// T in /proc/PID/task/TID/stat), gone, or a zombie (Z, X): a process that
// exited and that its stopped parent cannot reap runs nothing either.
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

// family returns pid and its children's pids, read from /proc.
func family(pid int) ([]int, error) {
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		return nil, fmt.Errorf("no /proc to find the server's processes in")
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

// wake resumes a server a failed test may have left paused.
func (s *Server) wake() {
	if pids, err := family(s.cmd.Process.Pid); err == nil {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}
