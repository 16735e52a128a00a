package bench

import "syscall"

// childProcAttr has the kernel kill the gateway child when this process
// dies, so that a benchmark killed with SIGKILL leaves no gateway behind.
// (Pdeathsig follows the thread that started the child; the Go runtime
// does not end its threads unless a goroutine exits locked to one, which
// this package never does.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
