//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package linearizability

import "time"

// monotonic is the wall clock where CLOCK_MONOTONIC cannot be read: shared
// by the host's processes too, but a clock step during a run can misorder
// hits, and a checker told a false order can report a violation that did
// not happen.
func monotonic() int64 { return time.Now().UnixNano() }
