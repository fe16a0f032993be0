//go:build !unix

package sqltest

import "os/exec"

// runAs does nothing where there is no root to drop: dropRoot returns an
// account only when the process runs as root.
func runAs(*exec.Cmd, *account) {}
