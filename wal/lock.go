//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd || illumos

package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockName is the file in a log directory that Open flocks.
const lockName = "LOCK"

// lockDir takes an exclusive, non-blocking flock on dir/LOCK and returns the
// open lock file; closing it releases the lock. The lock belongs to the open
// file, so a second Open of the same directory fails even in the same process,
// and the kernel releases it when the process dies, even by SIGKILL.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("wal: %s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("wal: lock %s: %w", path, err)
	}
	return f, nil
}
