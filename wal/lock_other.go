//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd || illumos)

package wal

import (
	"fmt"
	"os"
	"runtime"
)

// lockDir fails where rostrum has no flock: a log without its lock could be
// written by two processes at once.
func lockDir(dir string) (*os.File, error) {
	return nil, fmt.Errorf("wal: lock %s: directory locking is not supported on %s", dir, runtime.GOOS)
}
