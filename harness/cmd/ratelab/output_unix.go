//go:build unix

package main

import "golang.org/x/sys/unix"

// outputGone reports whether standard output or error is a pipe or a
// socket whose reader has gone: poll(2) says so at once, with POLLERR
// (Linux, of a pipe) or POLLHUP. A terminal, a file or /dev/null never
// does.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if n, err := unix.Poll(fds, 0); err != nil || n == 0 {
		return false
	}
	for _, p := range fds {
		if p.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
