package redisstore

import "github.com/ratelab/ratelab/internal/hostport"

// checkAddrs reports the first of addrs that is not a usable host:port;
// a Unix socket's path is not checked.
func checkAddrs(network string, addrs ...string) error {
	if network == "unix" {
		return nil
	}
	for _, a := range addrs {
		if err := hostport.Check(a); err != nil {
			return err
		}
	}
	return nil
}
