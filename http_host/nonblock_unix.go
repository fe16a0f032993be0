//go:build unix

package httphost

import (
	"net"
	"syscall"
)

// setNonblock puts ln's socket back in non-blocking mode, which the
// runtime's poller needs of it: exec hands a child its descriptors in
// blocking mode, and the mode belongs to the socket, which the front's
// listener shares with the child's copy.
func setNonblock(ln *net.TCPListener) error {
	rc, err := ln.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return serr
}
