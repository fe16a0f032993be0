//go:build !unix

package sqlserver

import (
	"errors"
	"os/exec"
)

// runAs does nothing where there is no root to drop: dropRoot returns an
// account only when the process runs as root.
func runAs(*exec.Cmd, *account) {}

// Pause is not supported where there is no SIGSTOP.
func (s *Server) Pause() (resume func() error, err error) {
	return nil, errors.New("sqlserver: pausing a server needs SIGSTOP")
}

// wake does nothing: no server is ever paused here.
func (s *Server) wake() {}
