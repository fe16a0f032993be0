//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"errors"
	"syscall"
)

// unshareMounts: only Linux gives a child mounts of its own.
func unshareMounts() *syscall.SysProcAttr { return nil }

// mountReadOnly: only Linux gives a child mounts of its own.
func mountReadOnly(string) error { return errors.ErrUnsupported }
