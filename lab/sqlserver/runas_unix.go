//go:build unix

package sqlserver

import (
	"fmt"
	"os/exec"
	"syscall"

	"github.com/ratelab/ratelab/internal/procstop"
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
// in /proc: Pause works where /proc does. The server is stopped first, so
// that it starts no process after the list.
func (s *Server) Pause() (resume func() error, err error) {
	pids, err := procstop.Family(s.cmd.Process.Pid)
	if err != nil {
		return nil, fmt.Errorf("sqlserver: pause: %w", err)
	}
	return procstop.Stop(pids)
}

// wake resumes a server a failed test may have left paused.
func (s *Server) wake() {
	if pids, err := procstop.Family(s.cmd.Process.Pid); err == nil {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}
