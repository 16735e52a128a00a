//go:build !linux

package testenv

import "os/exec"

// dieWithParent has no portable equivalent off Linux: a test binary killed
// before its Cleanups run leaves its servers running there.
func dieWithParent(*exec.Cmd) {}
