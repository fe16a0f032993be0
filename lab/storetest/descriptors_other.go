//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package storetest

import "testing"

// outOfDescriptors needs getrlimit(2), which this system lacks.
func outOfDescriptors(t *testing.T, _ Database) {
	t.Skip("no RLIMIT_NOFILE on this system to lower")
}
