// Package freeport finds a free TCP port on 127.0.0.1 for a private test
// server. The port was free a moment ago; a server that then fails to bind
// it retries with another.
package freeport

import "net"

// Get returns a port on 127.0.0.1 that was free a moment ago.
func Get() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
