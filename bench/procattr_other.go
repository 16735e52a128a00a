//go:build !linux

package bench

import "syscall"

// childProcAttr: outside Linux the gateway child stops when its stdin
// reaches EOF, which happens when this process dies.
func childProcAttr() *syscall.SysProcAttr { return nil }
