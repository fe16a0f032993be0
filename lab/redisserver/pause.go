package redisserver

import "github.com/ratelab/ratelab/internal/procstop"

// Pause stops the server's process (SIGSTOP) and waits until it is
// stopped, as a paused host or a machine swapping stops: the kernel still
// takes connections and commands into its sockets, and the server runs
// them when it wakes. It returns what resumes it (SIGCONT), as
// sqlserver.Server.Pause does.
func (s *Server) Pause() (resume func() error, err error) {
	return procstop.Stop([]int{s.cmd.Process.Pid})
}
