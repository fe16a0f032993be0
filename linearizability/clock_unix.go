//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package linearizability

import "golang.org/x/sys/unix"

// monotonic reads CLOCK_MONOTONIC, in nanoseconds: one clock for every
// process of the host, which never steps back (time.Now's monotonic
// reading counts from the process's start, so processes cannot compare
// theirs).
func monotonic() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("linearizability: CLOCK_MONOTONIC: " + err.Error()) // every Unix kernel Go runs on has it
	}
	return ts.Nano()
}
