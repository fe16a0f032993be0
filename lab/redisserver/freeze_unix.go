//go:build unix

package redisserver

import "syscall"

// Freeze stops the server's process (SIGSTOP), as a paused host or a
// machine swapping would: the kernel still takes connections and
// commands into its sockets, and the server runs them when it wakes.
func (s *Server) Freeze() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Thaw lets a frozen server run again (SIGCONT).
func (s *Server) Thaw() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
