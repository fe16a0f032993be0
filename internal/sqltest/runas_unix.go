//go:build unix

package sqltest

import (
	"os/exec"
	"syscall"
)

// runAs makes cmd run as a's user and group.
func runAs(cmd *exec.Cmd, a *account) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.uid, Gid: a.gid}}
}
