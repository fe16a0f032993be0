package procstop

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes cmd's process get SIGKILL when the process that
// starts it dies, however it dies — a private server would otherwise run
// on, listening, after its starter was killed with SIGKILL (prctl(2),
// PR_SET_PDEATHSIG). Call it after any other setting of cmd.SysProcAttr.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
