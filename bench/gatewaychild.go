package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/route"
)

// GatewayChildEnv names the environment variable that makes a process the
// gateway benchmark's child: RunGateway re-executes its own binary with
// the variable set to a GatewayChild in JSON, and the binary's main (and
// the TestMain of a test binary that runs RunGateway) hands the process to
// GatewayChildMain when LookupGatewayChild finds it. It is an environment
// variable rather than a subcommand so that it reaches a test binary's
// TestMain untouched by flag parsing and stays out of every help text.
const GatewayChildEnv = "ROSTRUM_BENCH_GATEWAY_CHILD"

// GatewayChild is what the benchmark hands its gateway child.
type GatewayChild struct {
	Brokers     []string `json:"brokers"`      // seed brokers
	MaxInflight int      `json:"max_inflight"` // the gateway's Config.MaxInflight
	// KafkaArgs are the parent's --kafka-* flags (TLS, SASL), for the
	// command's wiring to turn into kgo options as the parent did. They
	// never hold a password: that travels in the child's environment.
	KafkaArgs []string `json:"kafka_args,omitempty"`
	// ProfileDir, when set, is where the child writes cpu.pprof (its
	// whole life) and allocs.pprof (at exit, one sample per 4 KiB
	// allocated rather than per 512 KiB).
	ProfileDir string `json:"profile_dir,omitempty"`
}

// LookupGatewayChild reports whether this process was started as the
// gateway benchmark's child (GatewayChildEnv is set) and what it was handed.
func LookupGatewayChild() (GatewayChild, bool, error) {
	var c GatewayChild
	v, ok := os.LookupEnv(GatewayChildEnv)
	if !ok {
		return c, false, nil
	}
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		return c, true, fmt.Errorf("bench: gateway child: %s: %w", GatewayChildEnv, err)
	}
	return c, true, nil
}

// childStats are the gateway child's own counters, since it started.
type childStats struct {
	Mallocs    uint64 `json:"mallocs"`     // runtime.MemStats.Mallocs
	TotalAlloc uint64 `json:"total_alloc"` // runtime.MemStats.TotalAlloc, bytes
	CPUNanos   int64  `json:"cpu_ns"`      // user + system CPU time of the process (getrusage RUSAGE_SELF)
}

// GatewayChildMain is the gateway benchmark's child process: it builds the
// gateway as the in-process benchmark does (newBenchGateway), on a client
// with the seed brokers of c and kafkaOpts, listens on 127.0.0.1:0 and
// speaks this protocol, one line per message:
//
//	child → parent   listening <host:port>          once, when it accepts requests
//	parent → child   stats                          any number of times
//	child → parent   {"mallocs":N,"total_alloc":N,"cpu_ns":N}
//	                                                 its counters since it started
//
// It serves until stdin reaches EOF (the parent closed it, or died) or ctx
// ends (a signal), then shuts the gateway down and returns. Nothing else is
// written to stdout; errors are returned, for main to print on stderr.
func GatewayChildMain(ctx context.Context, c GatewayChild, kafkaOpts []kgo.Opt, stdin io.Reader, stdout io.Writer) error {
	if len(c.Brokers) == 0 {
		return errors.New("bench: gateway child: no brokers")
	}
	if c.ProfileDir != "" {
		stopProfile, err := startProfiles(c.ProfileDir)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, kafkaOpts...)
	gw, cl, err := newBenchGateway(opts, c.MaxInflight)
	if err != nil {
		return err
	}
	defer cl.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("bench: gateway child: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, ln, nil) }()

	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	if _, err := fmt.Fprintf(stdout, "listening %s\n", ln.Addr()); err != nil {
		return fmt.Errorf("bench: gateway child: %w", err)
	}
	for err == nil {
		select {
		case <-ctx.Done():
			return <-served
		case line, ok := <-lines:
			switch {
			case !ok:
				stop()
				return <-served
			case line == "stats":
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b, _ := json.Marshal(childStats{Mallocs: ms.Mallocs, TotalAlloc: ms.TotalAlloc, CPUNanos: int64(cpuTime())})
				_, err = stdout.Write(append(b, '\n'))
			default:
				err = fmt.Errorf("unknown request %q", line)
			}
		}
	}
	stop()
	<-served
	return fmt.Errorf("bench: gateway child: %w", err)
}

// startProfiles starts a CPU profile into dir/cpu.pprof and samples an
// allocation per 4 KiB; the function it returns stops the CPU profile and
// writes dir/allocs.pprof.
func startProfiles(dir string) (func(), error) {
	runtime.MemProfileRate = 4096
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("bench: gateway child: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: gateway child: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(filepath.Join(dir, "allocs.pprof")); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}, nil
}

// newBenchGateway returns the benchmark's gateway, open to every request,
// with routes for the env "bench", on a client of its own built from opts
// with the gateway's producer options.
func newBenchGateway(opts []kgo.Opt, maxInflight int) (*gateway.Gateway, *kgo.Client, error) {
	opts = append(opts[:len(opts):len(opts)], gateway.ProducerOpts(gateway.DefaultProduceTimeout, gateway.DefaultMaxBodyBytes)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, err
	}
	routes, _ := route.New(nil, "bench")
	gw, err := gateway.New(gateway.Config{Client: cl, Routes: routes, Insecure: true, MaxInflight: maxInflight, Logger: zap.NewNop()})
	if err != nil {
		cl.Close()
		return nil, nil, err
	}
	return gw, cl, nil
}

// gatewayProc is the parent's handle on a gateway child. Not safe for
// concurrent use.
type gatewayProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // the child's stdout, a line at a time; closed at EOF
	stderr *tailBuffer
	addr   string
}

// childTimeout bounds the child's start and each of its answers.
const childTimeout = 30 * time.Second

// startGatewayChild starts this binary as the gateway child with c and
// extraEnv (the password of the Kafka flags) added to this process's
// environment, and waits until it listens. The child gets SIGKILL if this
// process dies (Linux), and exits by itself when its stdin reaches EOF.
func startGatewayChild(c GatewayChild, extraEnv []string) (*gatewayProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: gateway child: %w", err)
	}
	spec, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	p := &gatewayProc{cmd: exec.Command(exe), lines: make(chan string, 1), stderr: &tailBuffer{max: 16 << 10}}
	p.cmd.Env = append(append(os.Environ(), GatewayChildEnv+"="+string(spec)), extraEnv...)
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = childProcAttr()
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: gateway child: start %s: %w", exe, err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	line, err := p.next()
	if err == nil {
		var ok bool
		if p.addr, ok = strings.CutPrefix(line, "listening "); !ok {
			err = fmt.Errorf("said %q, want listening <address>", line)
		}
	}
	if err != nil {
		return nil, p.fail("did not start", err)
	}
	return p, nil
}

// next returns the child's next line of stdout.
func (p *gatewayProc) next() (string, error) {
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", io.ErrUnexpectedEOF
		}
		return line, nil
	case <-time.After(childTimeout):
		return "", fmt.Errorf("no answer within %s", childTimeout)
	}
}

// stats asks the child for its counters.
func (p *gatewayProc) stats() (childStats, error) {
	var s childStats
	if _, err := io.WriteString(p.stdin, "stats\n"); err != nil {
		return s, p.fail("stats", err)
	}
	line, err := p.next()
	if err == nil {
		err = json.Unmarshal([]byte(line), &s)
	}
	if err != nil {
		return s, p.fail("stats", err)
	}
	return s, nil
}

// close closes the child's stdin, which makes it shut down, and waits for
// it (killing it after childTimeout); it returns an error if the child
// failed.
func (p *gatewayProc) close() error {
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("bench: gateway child: %w; its stderr:\n%s", err, p.stderr)
		}
		return nil
	case <-time.After(childTimeout):
		_ = p.cmd.Process.Kill()
		<-done
		return fmt.Errorf("bench: gateway child: did not stop within %s of its stdin closing; its stderr:\n%s", childTimeout, p.stderr)
	}
}

// fail kills the child and returns an error that holds what it wrote on
// stderr.
func (p *gatewayProc) fail(what string, err error) error {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	return fmt.Errorf("bench: gateway child: %s: %w; its stderr:\n%s", what, err, p.stderr)
}

// tailBuffer keeps the last max bytes written to it; safe for concurrent
// use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
