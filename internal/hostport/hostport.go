// Package hostport checks the host:port addresses of servers a store is
// given, so that a port that cannot exist is a configuration error found
// at start, not an outage found at the first hit.
package hostport

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Check reports an error unless addr is host:port with a port from 1 to
// 65535 and a host that is not empty.
func Check(addr string) error {
	if strings.Contains(addr, "@") { // not quoted: what comes before the '@' may be a password
		return errors.New("an address holds an '@': a user or password is written where only host:port belongs")
	}
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
