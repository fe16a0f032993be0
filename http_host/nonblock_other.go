//go:build !unix

package httphost

import "net"

// setNonblock has nothing to undo where exec does not hand a child its
// descriptors in blocking mode.
func setNonblock(*net.TCPListener) error { return nil }
