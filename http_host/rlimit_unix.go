//go:build unix

package httphost

import "syscall"

// fdLimit returns the soft limit on open descriptors.
func fdLimit() (uint64, error) {
	var rl syscall.Rlimit
	err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return uint64(rl.Cur), err
}
