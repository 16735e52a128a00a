package testenv

import (
	"bytes"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// startTimeout bounds how long a server may take to answer PING.
	startTimeout = 10 * time.Second
	// stopTimeout bounds how long a server may take to exit after a signal
	// before it is killed.
	stopTimeout = 10 * time.Second
)

// lookBinary returns the path of the named Redis tool, failing the test with
// InstallHint when it is not on PATH.
func lookBinary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("testenv: %s not found on PATH; %s", name, InstallHint)
	}
	return p
}

// process is one server process started by a test. Its output (stdout and
// stderr) is kept for failure messages. On Linux the process is killed when
// the test binary dies, so a test binary killed by -timeout leaks nothing.
type process struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{} // closed once the process has exited and been reaped
}

func startProcess(bin string, args []string) (*process, error) {
	p := &process{out: new(syncBuffer), exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	dieWithParent(p.cmd)
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop sends sig, waits for the process to exit and kills it if it has not
// exited after stopTimeout. It returns once the process is gone.
func (p *process) stop(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitReady calls ping until it returns nil (the server answers PING with
// PONG), the process exits, or timeout passes. A server still loading its
// data set answers -LOADING and is waited for.
func waitReady(ping func() error, p *process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = ping(); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before answering PING (%v)", p.cmd.ProcessState)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not answering PING after %s: %v", timeout, last)
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a process's
// stdout and stderr copiers and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
