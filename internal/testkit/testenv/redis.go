package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisping"
)

// InstallHint is printed when a Redis binary the tests need is missing.
const InstallHint = "install it with: apt-get install -y redis-server (Debian/Ubuntu; it pulls in redis-tools, which has redis-cli) — `make test` and .ci/run do this for you"

// Redis is a redis-server process started for one test, or a Redis container
// when the docker build tag and ROSTRUM_TEST_DOCKER=1 are set. Its methods
// must be called from the test's goroutine, as they may end the test.
type Redis struct {
	// Addr is host:port of the server, stable across Restart.
	Addr string

	tb      testing.TB
	bin     string // redis-server; empty when container-backed
	dir     string // working directory: log, dump.rdb, nodes.conf
	host    string // address bound and announced; empty: 127.0.0.1
	port    int
	persist bool
	extra   []string
	user    string // ACL user (WithACLUser); empty: the default user, no password
	pass    string
	certs   *Certs // TLS only (WithRedisTLS); nil: plain TCP
	mutual  bool   // TLS clients must present a certificate
	// certFile and keyFile replace certs' server certificate when set
	// (WithDistinctHosts: one certificate per node, for its address only).
	certFile, keyFile string
	distinct          bool // WithDistinctHosts

	mu   sync.Mutex
	proc *process // nil while stopped
}

// RedisOption adjusts how a test's redis-server is started.
type RedisOption func(*Redis)

// WithPersistence makes the server save an RDB snapshot in its directory
// (after an hour with one change, and on shutdown) so that Restart(true) and
// a restart after SIGTERM bring the data back.
func WithPersistence() RedisOption { return func(r *Redis) { r.persist = true } }

// WithArgs passes extra command-line arguments to redis-server; they come
// after testenv's own and so override them.
func WithArgs(args ...string) RedisOption {
	return func(r *Redis) { r.extra = append(r.extra, args...) }
}

// WithACLUser creates the ACL user name with password pass and full rights,
// and disables the default user, so every connection must AUTH as name.
// Client, Options and Restart authenticate as that user.
func WithACLUser(name, pass string) RedisOption {
	return func(r *Redis) { r.user, r.pass = name, pass }
}

// WithRedisTLS makes the server speak TLS only (its plain port is off),
// presenting c's server certificate; with mutual, clients must present a
// certificate signed by c's CA (tls-auth-clients yes). Client, Options and
// Restart use c.ClientConfig.
func WithRedisTLS(c *Certs, mutual bool) RedisOption {
	return func(r *Redis) { r.certs, r.mutual = c, mutual }
}

// WithDistinctHosts puts the masters of StartRedisCluster on distinct
// loopback addresses, 127.0.0.1, 127.0.0.2 and 127.0.0.3, each announced as
// such to the cluster and its clients. With WithRedisTLS each node then
// presents a certificate from the same CA whose only name is its own IP
// address, so a client that checks a node against any other host fails:
// tests see whether a client verifies each node against its own address.
// It needs a system that routes all of 127.0.0.0/8 to loopback (Linux);
// elsewhere StartRedisCluster skips the test. StartRedis ignores it.
func WithDistinctHosts() RedisOption { return func(r *Redis) { r.distinct = true } }

// RedisBinary returns the path of redis-server, failing the test with
// InstallHint when it is missing.
func RedisBinary(tb testing.TB) string {
	tb.Helper()
	return lookBinary(tb, "redis-server")
}

// StartRedis starts a redis-server on a free loopback port with persistence
// off (unless WithPersistence) and stops it when the test ends. It fails the
// test, with the server's log, if the server does not answer PING within 10 s.
//
// In a build with the docker tag and ROSTRUM_TEST_DOCKER=1 it starts a Redis
// container instead (options are ignored), or skips the test when no Docker
// engine is reachable.
//
// A server with WithACLUser or WithRedisTLS is always a local redis-server:
// the container path knows neither.
func StartRedis(tb testing.TB, opts ...RedisOption) *Redis {
	tb.Helper()
	r := &Redis{tb: tb}
	for _, o := range opts {
		o(r)
	}
	if r.user == "" && r.certs == nil {
		if addr, ok := dockerRedis(tb); ok {
			return &Redis{Addr: addr, tb: tb}
		}
	}
	r.dir = tb.TempDir()
	r.launch(FreePort)
	return r
}

// errAddrInUse reports that another process took the port between FreePort
// and redis-server binding it.
var errAddrInUse = errors.New("address already in use")

// launch starts the server on a port from pick, trying up to three fresh
// ports when one was taken meanwhile, and stops it when the test ends.
func (r *Redis) launch(pick func(testing.TB) int) {
	r.tb.Helper()
	if r.host == "" {
		r.host = "127.0.0.1"
	}
	r.bin = RedisBinary(r.tb)
	r.tb.Cleanup(func() { r.stop(syscall.SIGTERM) })
	var err error
	for range 3 {
		r.port = pick(r.tb)
		r.Addr = net.JoinHostPort(r.host, strconv.Itoa(r.port))
		_ = os.Remove(r.logPath())
		if err = r.start(); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		r.tb.Fatalf("testenv: redis-server on %s: %v", r.Addr, err)
	}
}

func (r *Redis) args() []string {
	a := []string{
		"--port", strconv.Itoa(r.port),
		"--bind", r.host,
		"--dir", r.dir,
		"--appendonly", "no",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--loglevel", "warning",
		"--logfile", r.logPath(),
		"--dbfilename", "dump.rdb",
	}
	if r.certs != nil {
		certFile, keyFile := r.certs.ServerCertFile, r.certs.ServerKeyFile
		if r.certFile != "" {
			certFile, keyFile = r.certFile, r.keyFile
		}
		auth := "optional"
		if r.mutual {
			auth = "yes"
		}
		a = append(a, "--port", "0", "--tls-port", strconv.Itoa(r.port),
			"--tls-cert-file", certFile, "--tls-key-file", keyFile,
			"--tls-ca-cert-file", r.certs.CAFile, "--tls-auth-clients", auth,
			// The server certificate is for server use only, so a node that
			// dials out (cluster bus, replication) presents the client one:
			// peers verify it as a client certificate.
			"--tls-client-cert-file", r.certs.ClientCertFile, "--tls-client-key-file", r.certs.ClientKeyFile)
	}
	if r.user != "" {
		// redis-server quotes each argument into its config line, so the
		// password may hold any character.
		a = append(a, "--user", "default", "off",
			"--user", r.user, "on", ">"+r.pass, "~*", "&*", "+@all")
	}
	if r.persist {
		a = append(a, "--save", "3600 1")
	} else {
		a = append(a, "--save", "")
	}
	return append(a, r.extra...)
}

// start runs redis-server and waits until it answers PING. On failure the
// process is gone and the error carries the server's log.
func (r *Redis) start() error {
	p, err := startProcess(r.bin, r.args())
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.proc = p
	r.mu.Unlock()
	ping := func() error { return redisping.Ping(r.Addr) }
	if r.user != "" || r.certs != nil {
		ping = r.pingSecure
	}
	if err := waitReady(ping, p, startTimeout); err != nil {
		r.stop(syscall.SIGKILL)
		log := r.log() + p.out.String()
		if strings.Contains(log, "Address already in use") {
			return fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return fmt.Errorf("%v; log:\n%s", err, log)
	}
	return nil
}

// stop signals the server and waits for it to exit; it is a no-op when the
// server is not running.
func (r *Redis) stop(sig syscall.Signal) {
	r.mu.Lock()
	p := r.proc
	r.proc = nil
	r.mu.Unlock()
	if p != nil {
		p.stop(sig)
	}
}

func (r *Redis) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.proc != nil
}

func (r *Redis) logPath() string { return filepath.Join(r.dir, "redis.log") }

func (r *Redis) log() string {
	b, _ := os.ReadFile(r.logPath())
	return string(b)
}

// skipIfContainer skips the test when the server runs in a container, where
// testenv cannot kill or restart it.
func (r *Redis) skipIfContainer(what string) {
	r.tb.Helper()
	if r.bin == "" {
		r.tb.Skipf("testenv: %s needs a local redis-server; Redis runs in a container (ROSTRUM_TEST_DOCKER=1)", what)
	}
}

// Kill stops the server with SIGKILL, as a crash would: data not yet saved
// is lost. Start it again with Restart. Kill on a stopped server does
// nothing. A container-backed Redis skips the test.
func (r *Redis) Kill() {
	r.tb.Helper()
	r.skipIfContainer("Kill")
	r.stop(syscall.SIGKILL)
}

// Restart stops the server (if running) and starts it again on the same
// address. With keepData a running server saves its data set first (SAVE)
// and the server comes back with it; a server stopped by Kill comes back
// with its last snapshot, if any. Without keepData the server is killed, its
// snapshot deleted, and it comes back empty, as after losing its disk. A
// Redis Cluster node keeps its cluster identity (nodes.conf) either way and
// rejoins the cluster. A container-backed Redis skips the test.
func (r *Redis) Restart(keepData bool) {
	r.tb.Helper()
	r.skipIfContainer("Restart")
	if keepData {
		if r.running() {
			c := redis.NewClient(r.Options())
			err := c.Save(context.Background()).Err()
			_ = c.Close()
			if err != nil {
				r.tb.Fatalf("testenv: SAVE on %s before restart: %v", r.Addr, err)
			}
		}
		r.stop(syscall.SIGTERM)
	} else {
		r.stop(syscall.SIGKILL)
		if err := os.Remove(filepath.Join(r.dir, "dump.rdb")); err != nil && !errors.Is(err, os.ErrNotExist) {
			r.tb.Fatalf("testenv: delete snapshot of %s: %v", r.Addr, err)
		}
		// A server started WithArgs("--appendonly", "yes") keeps its data
		// in the append-only file too.
		if err := os.RemoveAll(filepath.Join(r.dir, "appendonlydir")); err != nil {
			r.tb.Fatalf("testenv: delete append-only file of %s: %v", r.Addr, err)
		}
	}
	if err := r.start(); err != nil {
		r.tb.Fatalf("testenv: restart redis-server on %s: %v", r.Addr, err)
	}
}

// Client returns a go-redis client for the server, closed when the test
// ends. It survives Restart: go-redis reconnects on the next command.
func (r *Redis) Client() *redis.Client {
	c := redis.NewClient(r.Options())
	r.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Options returns go-redis options that reach the server: its address and,
// when set, the ACL user and the TLS client configuration, which expects the
// server's certificate to name the server's host. Each call returns
// a new value the caller may change.
func (r *Redis) Options() *redis.Options {
	o := &redis.Options{Addr: r.Addr, Username: r.user, Password: r.pass}
	if r.certs != nil {
		o.TLSConfig = r.certs.ClientConfig()
		// The server's own host, which its certificate names also when
		// WithDistinctHosts put it elsewhere than 127.0.0.1.
		if host, _, err := net.SplitHostPort(r.Addr); err == nil {
			o.TLSConfig.ServerName = host
		}
	}
	return o
}

// pingSecure is the readiness check of a server that needs TLS or AUTH,
// which the raw RESP ping does not speak.
func (r *Redis) pingSecure() error {
	o := r.Options()
	o.MaxRetries = -1
	o.DialTimeout = time.Second
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}
