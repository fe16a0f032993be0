//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package postgresstore_test

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab/lab/storetest"
)

// A process out of file descriptors cannot dial the server: load, not an
// outage (fixed_filestore's TestOutOfDescriptorsIsLoad). Not parallel:
// it lowers the process's limit.
func TestOutOfDescriptorsIsLoad(t *testing.T) {
	skipWithoutServer(t)
	storetest.OutOfDescriptors(t, func(o storetest.Options) storetest.DatabaseStore {
		return connect(t, server.DSN, 5*time.Second)(o)
	})
}
