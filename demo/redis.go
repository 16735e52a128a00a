package demo

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/rostrumhq/rostrum/internal/redisping"
)

// Redis is a private redis-server process with persistence off.
//
// The demo runs the real server rather than an in-memory imitation: rostrum's
// scripts use Redis's Lua struct library and exact score formatting, which
// imitations lack.
type Redis struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
}

// StartRedis starts redis-server on a free loopback port.
func StartRedis() (*Redis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("demo: redis-server not found on PATH: install it (apt-get install -y redis-server; `make run` does this), or pass --redis host:port")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir, err := os.MkdirTemp("", "rostrum-demo-redis-")
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", dir+"/redis.log", "--protected-mode", "no")
	// Own process group: a terminal Ctrl-C must reach rostrum only, which
	// drains its batch into Redis before stopping the server.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start redis-server: %w", err)
	}
	r := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := redisping.Ping(r.Addr); err == nil {
			return r, nil
		} else if time.Now().After(deadline) {
			r.Close()
			return nil, fmt.Errorf("demo: redis-server on %s did not start: %w", r.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close stops the server and removes its directory.
func (r *Redis) Close() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
	_ = os.RemoveAll(r.dir)
}
