package chaos

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes a child processor die with the test binary, so that
// a test killed by -timeout leaks no processes.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
