package soak

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Binary returns the rostrum binary the soak runs: $ROSTRUM_SOAK_BIN when
// set (make soak builds bin/rostrum), otherwise one built into dir.
func Binary(ctx context.Context, dir string) (string, error) {
	if b := os.Getenv("ROSTRUM_SOAK_BIN"); b != "" {
		return filepath.Abs(b)
	}
	out := filepath.Join(dir, "rostrum")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/rostrumhq/rostrum/cmd/rostrum")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("soak: go build rostrum: %v: %s", err, b)
	}
	return out, nil
}

// Proc is one `rostrum` process (run or gateway) serving HTTP on Addr,
// where /metrics is scraped.
type Proc struct {
	Name   string
	Addr   string // host:port of its HTTP server
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start runs bin with args, its output appended to logPath, and waits up
// to 30 s for GET /healthz on addr to answer 200.
func Start(name, bin, addr, logPath string, args ...string) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A soak interrupted by ^C or a test timeout must not leave processes
	// behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("soak: start %s: %w", name, err)
	}
	p := &Proc{Name: name, Addr: addr, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	cl := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := cl.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("soak: %s exited at start (%v); see %s", name, cmd.ProcessState, logPath)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("soak: %s not serving /healthz after 30s; see %s", name, logPath)
		}
	}
}

// Kill ends the process with SIGKILL and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop sends SIGTERM and waits up to 30 s, then SIGKILLs; it reports
// whether the process exited cleanly.
func (p *Proc) Stop() error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.Kill()
		return fmt.Errorf("soak: %s did not stop within 30s", p.Name)
	}
	if !p.cmd.ProcessState.Success() {
		return fmt.Errorf("soak: %s exited with %v", p.Name, p.cmd.ProcessState)
	}
	return nil
}

// Gauges are the process figures a soak samples from a /metrics page.
type Gauges struct {
	RSS        float64 // process_resident_memory_bytes
	Goroutines float64 // go_goroutines
	OpenFiles  float64 // process_open_fds
}

// Scrape reads p's /metrics and returns its gauges.
func (p *Proc) Scrape(cl *http.Client) (Gauges, error) {
	resp, err := cl.Get("http://" + p.Addr + "/metrics")
	if err != nil {
		return Gauges{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Gauges{}, fmt.Errorf("soak: %s /metrics: %s", p.Name, resp.Status)
	}
	var g Gauges
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *float64
		switch name {
		case "process_resident_memory_bytes":
			dst = &g.RSS
		case "go_goroutines":
			dst = &g.Goroutines
		case "process_open_fds":
			dst = &g.OpenFiles
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return Gauges{}, fmt.Errorf("soak: %s /metrics: %s: %w", p.Name, name, err)
		}
		*dst = v
		found++
	}
	if err := sc.Err(); err != nil {
		return Gauges{}, err
	}
	if found != 3 {
		return Gauges{}, fmt.Errorf("soak: %s /metrics lacks the process gauges (%d of 3)", p.Name, found)
	}
	return g, nil
}

// DirBytes returns the total size of the regular files under dir.
func DirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a segment pruned while walking
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n, err
}
