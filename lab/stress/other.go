//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

// Package stress needs flock(2) semantics; elsewhere it has no roles.
package stress

import "github.com/ratelab/ratelab/internal/childproc"

// Roles is empty where flock(2) is not available.
func Roles() childproc.Roles { return nil }
