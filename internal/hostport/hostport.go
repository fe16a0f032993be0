// Package hostport checks the host:port addresses of servers a store is
// given, so that a port that cannot exist is a configuration error found
// at start, not an outage found at the first hit.
package hostport

import (
	"fmt"
	"net"
	"strconv"
)

// Check reports an error unless addr is host:port with a port from 1 to
// 65535 and a host that is not empty.
func Check(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("address %q has no host", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("address %q: port %q is not a number from 1 to 65535", addr, port)
	}
	return nil
}
