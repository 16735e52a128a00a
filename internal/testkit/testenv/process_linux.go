package testenv

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to SIGKILL the child when the thread that
// started it exits. Go keeps that thread for the life of the test binary (no
// test code locks it), so in practice the child dies with the test binary,
// including when -timeout kills it before any Cleanup runs.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
