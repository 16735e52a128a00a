package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// hupProc is a `rostrum run` child process whose output can be read while
// it runs.
type hupProc struct {
	cmd    *exec.Cmd
	out    *testenv.LockedBuffer
	exited chan struct{}
}

func startHupProc(t *testing.T, args []string) *hupProc {
	t.Helper()
	p := &hupProc{out: new(testenv.LockedBuffer), exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\x1f"))
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// hup sends SIGHUP and waits until the process has logged n reload lines
// in all (reloaded or not), failing if it exits.
func (p *hupProc) hup(t *testing.T, n int) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); strings.Count(p.out.String(), `"SIGHUP: `) < n; {
		select {
		case <-p.exited:
			t.Fatalf("rostrum run exited on SIGHUP: %s", p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reload logged after SIGHUP: %s", p.out.String())
		}
	}
}

func (p *hupProc) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
		t.Fatalf("rostrum run exited: %s", p.out.String())
	default:
	}
}

// TestRunReloadsCredentialsOnSIGHUP: SIGHUP makes a running `rostrum run`
// re-read its read and control token files and its certificate pair,
// without stopping; a broken file leaves the set in force in force, with
// a warning; the log gives counts, never a token.
func TestRunReloadsCredentialsOnSIGHUP(t *testing.T) {
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	r := testenv.StartRedis(t)
	certs := testenv.NewCerts(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "http.pem"), filepath.Join(dir, "http-key.pem")
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(certs.ServerCertFile, certFile)
	copyFile(certs.ServerKeyFile, keyFile)
	const readA, readB, readC = "read-token-aaaaaaaaaaaa", "read-token-bbbbbbbbbbbb", "read-token-cccccccccccc"
	const ctlA, ctlB = "control-token-aaaaaaaaaa", "control-token-bbbbbbbbbb"
	readFile, ctlFile := filepath.Join(dir, "read-tokens"), filepath.Join(dir, "control-tokens")
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(readFile, readA+"\n"+readB+"\n")
	write(ctlFile, ctlA+"\n")

	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	p := startHupProc(t, []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test", "--wal-dir", t.TempDir(),
		"--http", addr, "--log-level", "info", "--read-token-file", readFile, "--control-token-file", ctlFile,
		"--http-tls-cert", certFile, "--http-tls-key", keyFile})

	pool := x509.NewCertPool()
	ca, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	// A fresh connection per request, so that each presents the
	// certificate in force.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	base := "https://" + addr
	get := func(path, token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := hc.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		p.alive(t)
		if time.Now().After(deadline) {
			t.Fatalf("rostrum run not serving HTTPS after 30s (%v): %s", err, p.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	serial := func() string {
		t.Helper()
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	want := func(path, token string, code int) {
		t.Helper()
		if got := get(path, token); got != code {
			t.Errorf("GET %s with %.10s…: %d, want %d", path, token, got, code)
		}
	}
	want("/v1/rooms", readA, 200)
	want("/v1/rooms", readC, 401)
	want("/v1/rooms/r-1/recording", ctlA, 200)
	want("/v1/rooms/r-1/recording", ctlB, 401)
	first := serial()

	// Rotation: the files change, SIGHUP, the new sets are in force.
	write(readFile, readC+"\n")
	write(ctlFile, ctlB+"\n")
	next, nextKey := certs.ServerCertFor(t, net.IPv4(127, 0, 0, 1))
	copyFile(next, certFile)
	copyFile(nextKey, keyFile)
	p.hup(t, 3)
	want("/v1/rooms", readA, 401)
	want("/v1/rooms", readC, 200)
	want("/v1/rooms/r-1/recording", ctlA, 401)
	want("/v1/rooms/r-1/recording", ctlB, 200)
	if s := serial(); s == first {
		t.Errorf("the reloaded certificate is not presented (serial %s)", s)
	}
	second := serial()
	log := p.out.String()
	if !strings.Contains(log, `"flag": "--read-token-file", "before": 2, "after": 1, "added": 1, "removed": 2`) &&
		!strings.Contains(log, `"flag":"--read-token-file","before":2,"after":1,"added":1,"removed":2`) {
		t.Errorf("the reload of --read-token-file is not logged with its counts: %s", log)
	}

	// Broken files: an empty token file, a token too short, a broken pair.
	write(readFile, "# revoked\n")
	write(ctlFile, "tiny-tok\n")
	write(certFile, "not a certificate")
	p.hup(t, 6)
	want("/v1/rooms", readC, 200)
	want("/v1/rooms/r-1/recording", ctlB, 200)
	if s := serial(); s != second {
		t.Errorf("a broken pair replaced the certificate (serial %s, want %s)", s, second)
	}
	log = p.out.String()
	for _, w := range []string{"--read-token-file", "--control-token-file", "--http-tls-cert"} {
		if !strings.Contains(log, "stays in force") || !strings.Contains(log, w) {
			t.Errorf("no warning for %s: %s", w, log)
		}
	}
	for _, secret := range []string{readA, readB, readC, ctlA, ctlB, "tiny-tok"} {
		if strings.Contains(log, secret) {
			t.Errorf("the log holds a token: %s", log)
		}
	}
	p.alive(t)
}

// TestShortCredentialsStopStartup: a token or secret shorter than 16 bytes
// stops `run` and `gateway` at start, naming the flag and the file.
func TestShortCredentialsStopStartup(t *testing.T) {
	short := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(short, []byte("long-enough-token-0123\nshort-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--read-token-file", short},
		{"run", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--control-token-file", short},
		{"run", "--brokers", "127.0.0.1:1", "--redis", "127.0.0.1:1", "--admin-token-file", short},
		{"gateway", "--brokers", "127.0.0.1:1", "--route-default", "test", "--gateway-token-file", short},
		{"gateway", "--brokers", "127.0.0.1:1", "--route-default", "test", "--gateway-hmac-secret-file", short},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := Main(ctx, append(args, "--log-level", "error"), new(strings.Builder), new(strings.Builder))
		cancel()
		flag := args[len(args)-2]
		if err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), short) ||
			!strings.Contains(err.Error(), "too short") || strings.Contains(err.Error(), "short-token") {
			t.Errorf("%s with a short token: %v", flag, err)
		}
	}
}
