//go:build !linux

package procstop

import "os/exec"

// DieWithParent does nothing where there is no parent-death signal: a
// process started with cmd outlives a starter that was killed.
func DieWithParent(*exec.Cmd) {}
