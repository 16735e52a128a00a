package testenv

import "syscall"

// Pause stops the server with SIGSTOP: it keeps its connections open but
// answers nothing, as a Redis stalled by a long command, swapping or a
// saturated host would. Resume continues it. Pause on a stopped server does
// nothing. A container-backed Redis skips the test.
func (r *Redis) Pause() {
	r.tb.Helper()
	r.skipIfContainer("Pause")
	r.signal(syscall.SIGSTOP)
}

// Resume continues a server stopped by Pause (SIGCONT).
func (r *Redis) Resume() {
	r.tb.Helper()
	r.skipIfContainer("Resume")
	r.signal(syscall.SIGCONT)
}

func (r *Redis) signal(sig syscall.Signal) {
	r.mu.Lock()
	p := r.proc
	r.mu.Unlock()
	if p != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}
