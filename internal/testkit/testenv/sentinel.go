package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelInstallHint is printed when redis-sentinel is missing.
const SentinelInstallHint = "install it with: apt-get install -y redis-sentinel (Debian/Ubuntu) — `make test` does this for you"

const (
	// sentinelDownAfter is how long a test Sentinel waits before it deems
	// an unresponsive master down (down-after-milliseconds; Redis's
	// default is 30 s).
	sentinelDownAfter = 1000 * time.Millisecond
	// sentinelFailoverTimeout is the Sentinels' failover-timeout (Redis's
	// default is 3 minutes).
	sentinelFailoverTimeout = 4000 * time.Millisecond
	// sentinelTimeout bounds the waits for the Sentinels: to know each
	// other and the replicas at start, and to agree on a new master.
	sentinelTimeout = 30 * time.Second
)

// RedisSentinel is a Sentinel-managed Redis of local processes started for
// one test: a master, its replicas (replicaof) and three redis-sentinel
// processes that monitor it under Name, each on its own free loopback port
// and directory, persistence off. The Sentinels deem a master down after
// 1 s without an answer (down-after-milliseconds), and need two of them to
// agree (the quorum). Its methods must be called from the test's goroutine.
// It is always local, even with ROSTRUM_TEST_DOCKER=1.
type RedisSentinel struct {
	// Name is the master's name, as the Sentinels monitor it.
	Name string
	// Nodes are the data nodes; Nodes[0] was the master at start.
	Nodes []*Redis
	// SentinelAddrs holds host:port of each Sentinel.
	SentinelAddrs []string

	tb        testing.TB
	bin       string
	sentinels []*sentinelProc
	user      string // the Sentinels' ACL user (WithSentinelAuth); empty: requirepass or none
	pass      string
	certs     *Certs // TLS everywhere (WithNodeOptions(WithRedisTLS)); nil: plain TCP
	mutual    bool
}

// sentinelProc is one redis-sentinel process.
type sentinelProc struct {
	addr string
	dir  string
	proc *process
}

// SentinelOption adjusts StartRedisSentinel.
type SentinelOption func(*sentinelSetup)

type sentinelSetup struct {
	replicas   int
	user, pass string
	nodeOpts   []RedisOption
}

// WithReplicas sets the number of replicas of the master (default 1).
func WithReplicas(n int) SentinelOption { return func(s *sentinelSetup) { s.replicas = n } }

// WithSentinelAuth makes the Sentinels require a password of their
// clients: requirepass pass when user is empty, else an ACL user (the
// default user off). The Sentinels authenticate to each other with the
// same credentials; the helpers' own clients use them too.
func WithSentinelAuth(user, pass string) SentinelOption {
	return func(s *sentinelSetup) { s.user, s.pass = user, pass }
}

// WithNodeOptions applies opts to every data node, as StartRedis does.
// With WithACLUser the Sentinels and the replicas authenticate to the
// master as that user. With WithRedisTLS every link is TLS only: clients to
// the nodes and to the Sentinels (which present the same server
// certificate and ask for client certificates alike), replication, and
// the Sentinels' links to the nodes and to each other.
func WithNodeOptions(opts ...RedisOption) SentinelOption {
	return func(s *sentinelSetup) { s.nodeOpts = append(s.nodeOpts, opts...) }
}

// SentinelBinary returns the path of redis-sentinel. Where it is missing
// the test fails on CI (the CI variable set: `make deps` installs it) and
// is skipped elsewhere, both with SentinelInstallHint.
func SentinelBinary(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("redis-sentinel")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("testenv: redis-sentinel not found on PATH; %s", SentinelInstallHint)
	}
	tb.Skipf("testenv: redis-sentinel not found on PATH, Sentinel test skipped; %s", SentinelInstallHint)
	return ""
}

// StartRedisSentinel starts the master, its replicas and three Sentinels,
// and returns once every Sentinel names the master, sees every replica and
// knows the two other Sentinels, and every replica is in sync. Everything
// stops when the test ends. It fails the test when that takes more than
// 30 s.
func StartRedisSentinel(tb testing.TB, opts ...SentinelOption) *RedisSentinel {
	tb.Helper()
	set := sentinelSetup{replicas: 1}
	for _, o := range opts {
		o(&set)
	}
	s := &RedisSentinel{Name: "rostrum-test", tb: tb, bin: SentinelBinary(tb), user: set.user, pass: set.pass}
	for i := range 1 + set.replicas {
		n := &Redis{tb: tb, dir: tb.TempDir()}
		for _, o := range set.nodeOpts {
			o(n)
		}
		s.certs, s.mutual = n.certs, n.mutual
		args := []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
		if n.certs != nil {
			args = append(args, "--tls-replication", "yes")
		}
		if n.user != "" {
			args = append(args, "--masteruser", n.user, "--masterauth", n.pass)
		}
		if i > 0 {
			host, port, _ := net.SplitHostPort(s.Nodes[0].Addr)
			args = append(args, "--replicaof", host, port)
		}
		n.extra = append(args, n.extra...)
		n.launch(FreePort)
		s.Nodes = append(s.Nodes, n)
	}
	for range 3 {
		s.startSentinel()
	}
	s.waitReady()
	return s
}

// startSentinel writes a Sentinel's configuration (Sentinel rewrites it as
// it learns) and starts it on a free port, trying up to three ports.
func (s *RedisSentinel) startSentinel() {
	s.tb.Helper()
	sp := &sentinelProc{dir: s.tb.TempDir()}
	master := s.Nodes[0]
	host, port, _ := net.SplitHostPort(master.Addr)
	var err error
	for range 3 {
		p := FreePort(s.tb)
		sp.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		ms := strconv.FormatInt(sentinelDownAfter.Milliseconds(), 10)
		conf := []string{
			"port " + strconv.Itoa(p),
			"bind 127.0.0.1",
			"daemonize no",
			"protected-mode no",
			"dir " + sp.dir,
			"logfile " + filepath.Join(sp.dir, "sentinel.log"),
			"sentinel monitor " + s.Name + " " + host + " " + port + " 2",
			"sentinel down-after-milliseconds " + s.Name + " " + ms,
			"sentinel failover-timeout " + s.Name + " " + strconv.FormatInt(sentinelFailoverTimeout.Milliseconds(), 10),
			"sentinel parallel-syncs " + s.Name + " 1",
		}
		if c := s.certs; c != nil {
			auth := "optional"
			if s.mutual {
				auth = "yes"
			}
			conf = append(conf, "port 0", "tls-port "+strconv.Itoa(p),
				"tls-cert-file "+c.ServerCertFile, "tls-key-file "+c.ServerKeyFile, "tls-ca-cert-file "+c.CAFile,
				"tls-client-cert-file "+c.ClientCertFile, "tls-client-key-file "+c.ClientKeyFile,
				"tls-auth-clients "+auth, "tls-replication yes")
		}
		if master.user != "" {
			conf = append(conf, "sentinel auth-user "+s.Name+" "+master.user, "sentinel auth-pass "+s.Name+" "+strconv.Quote(master.pass))
		}
		switch {
		case s.user != "":
			conf = append(conf, "user default off",
				"user "+s.user+" on "+strconv.Quote(">"+s.pass)+" ~* &* +@all",
				"sentinel sentinel-user "+s.user, "sentinel sentinel-pass "+strconv.Quote(s.pass))
		case s.pass != "":
			conf = append(conf, "requirepass "+strconv.Quote(s.pass))
		}
		path := filepath.Join(sp.dir, "sentinel.conf")
		if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
			s.tb.Fatalf("testenv: write %s: %v", path, err)
		}
		if err = s.launchSentinel(sp, path); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		s.tb.Fatalf("testenv: redis-sentinel on %s: %v", sp.addr, err)
	}
	s.sentinels = append(s.sentinels, sp)
	s.SentinelAddrs = append(s.SentinelAddrs, sp.addr)
}

func (s *RedisSentinel) launchSentinel(sp *sentinelProc, conf string) error {
	_ = os.Remove(filepath.Join(sp.dir, "sentinel.log"))
	p, err := startProcess(s.bin, []string{conf})
	if err != nil {
		return err
	}
	sp.proc = p
	s.tb.Cleanup(func() { p.stop(syscall.SIGTERM) })
	ping := func() error {
		c := s.sentinelClient(sp.addr)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err()
	}
	if err := waitReady(ping, p, startTimeout); err != nil {
		p.stop(syscall.SIGKILL)
		b, _ := os.ReadFile(filepath.Join(sp.dir, "sentinel.log"))
		log := string(b) + p.out.String()
		if strings.Contains(log, "Address already in use") {
			return fmt.Errorf("%w: %v", errAddrInUse, err)
		}
		return fmt.Errorf("%v; log:\n%s", err, log)
	}
	return nil
}

// sentinelClient returns a client of the Sentinel at addr, with the
// Sentinels' credentials; the caller closes it.
func (s *RedisSentinel) sentinelClient(addr string) *redis.SentinelClient {
	o := &redis.Options{Addr: addr, Username: s.user, Password: s.pass, MaxRetries: -1, DialTimeout: time.Second}
	if s.certs != nil {
		o.TLSConfig = s.certs.ClientConfig()
	}
	return redis.NewSentinelClient(o)
}

// waitReady waits until every Sentinel names Nodes[0] as the master, sees
// every replica and knows the other Sentinels, and the replicas are in sync.
func (s *RedisSentinel) waitReady() {
	s.tb.Helper()
	replicas := len(s.Nodes) - 1
	s.waitSentinels("know the master, its replicas and each other", func(m map[string]string) bool {
		return m["ip"]+":"+m["port"] == s.Nodes[0].Addr && m["num-slaves"] == strconv.Itoa(replicas) &&
			m["num-other-sentinels"] == strconv.Itoa(len(s.sentinels)-1) && !strings.Contains(m["flags"], "down")
	})
	s.WaitReplicasSynced()
}

// waitSentinels waits until ok holds of SENTINEL MASTER Name on every
// Sentinel, failing the test after 30 s with the last replies and logs.
func (s *RedisSentinel) waitSentinels(what string, ok func(map[string]string) bool) {
	s.tb.Helper()
	deadline := time.Now().Add(sentinelTimeout)
	for {
		var last []string
		all := true
		for _, sp := range s.sentinels {
			m, err := s.masterInfo(sp.addr)
			if err != nil || !ok(m) {
				all = false
				last = append(last, fmt.Sprintf("%s: %v %v", sp.addr, m, err))
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("testenv: the Sentinels do not %s after %s:\n%s\n%s", what, sentinelTimeout, strings.Join(last, "\n"), s.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *RedisSentinel) masterInfo(addr string) (map[string]string, error) {
	c := s.sentinelClient(addr)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.Master(ctx, s.Name).Result()
}

// logs returns the Sentinels' logs, for failure messages.
func (s *RedisSentinel) logs() string {
	var b strings.Builder
	for _, sp := range s.sentinels {
		l, _ := os.ReadFile(filepath.Join(sp.dir, "sentinel.log"))
		fmt.Fprintf(&b, "--- sentinel %s:\n%s", sp.addr, l)
	}
	return b.String()
}

// FailoverOptions returns go-redis options of a failover client of the
// master, with the Sentinels' and the data nodes' credentials; each call
// returns a new value the caller may change.
func (s *RedisSentinel) FailoverOptions() *redis.FailoverOptions {
	n := s.Nodes[0]
	o := &redis.FailoverOptions{MasterName: s.Name, SentinelAddrs: append([]string(nil), s.SentinelAddrs...),
		SentinelUsername: s.user, SentinelPassword: s.pass, Username: n.user, Password: n.pass}
	if s.certs != nil {
		o.TLSConfig = s.certs.ClientConfig()
	}
	return o
}

// Client returns a failover client of the master (it follows failovers),
// closed when the test ends.
func (s *RedisSentinel) Client() *redis.Client {
	c := redis.NewFailoverClient(s.FailoverOptions())
	s.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// MasterAddr returns the master's address as the first Sentinel that
// answers names it.
func (s *RedisSentinel) MasterAddr() string {
	s.tb.Helper()
	var errs []error
	for _, a := range s.SentinelAddrs {
		c := s.sentinelClient(a)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		hp, err := c.GetMasterAddrByName(ctx, s.Name).Result()
		cancel()
		_ = c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1])
		}
		errs = append(errs, fmt.Errorf("%s: %v %w", a, hp, err))
	}
	s.tb.Fatalf("testenv: no Sentinel names master %s: %v", s.Name, errors.Join(errs...))
	return ""
}

// Master returns the data node the Sentinels name as the master.
func (s *RedisSentinel) Master() *Redis { return s.node(s.MasterAddr()) }

func (s *RedisSentinel) node(addr string) *Redis {
	s.tb.Helper()
	for _, n := range s.Nodes {
		if n.Addr == addr {
			return n
		}
	}
	s.tb.Fatalf("testenv: the Sentinels name %s, which is none of the data nodes", addr)
	return nil
}

// Failover asks a Sentinel for a failover (SENTINEL FAILOVER, which needs
// no agreement: the master is up) and waits until every Sentinel names the
// promoted replica and it answers as a master. It returns the new master.
func (s *RedisSentinel) Failover() *Redis {
	s.tb.Helper()
	old := s.MasterAddr()
	deadline := time.Now().Add(sentinelTimeout)
	for {
		c := s.sentinelClient(s.SentinelAddrs[0])
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Failover(ctx, s.Name).Err()
		cancel()
		_ = c.Close()
		if err == nil {
			break
		}
		// INPROG: a failover is under way; NOGOODSLAVE: no replica fit to
		// be promoted yet (one still syncing).
		if time.Now().After(deadline) {
			s.tb.Fatalf("testenv: SENTINEL FAILOVER %s: %v\n%s", s.Name, err, s.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s.WaitNewMaster(old)
}

// KillMaster stops the master with SIGKILL, as a crash would, and returns
// it. The Sentinels notice after down-after-milliseconds, agree, and
// promote a replica: WaitNewMaster waits for that.
func (s *RedisSentinel) KillMaster() *Redis {
	s.tb.Helper()
	m := s.Master()
	m.Kill()
	return m
}

// WaitNewMaster waits until every Sentinel names another master than old
// and that node answers as a master (INFO replication role:master), and
// returns it.
func (s *RedisSentinel) WaitNewMaster(old string) *Redis {
	s.tb.Helper()
	s.waitSentinels("agree on a master other than "+old, func(m map[string]string) bool {
		addr := m["ip"] + ":" + m["port"]
		if addr == old {
			return false
		}
		info, err := replicationInfo(s.node(addr))
		return err == nil && info["role"] == "master"
	})
	return s.Master()
}

// WaitReplicasSynced waits until every running replica of the current
// master has its link up and has processed the master's replication stream
// up to where it was when WaitReplicasSynced was called.
func (s *RedisSentinel) WaitReplicasSynced() {
	s.tb.Helper()
	m := s.Master()
	deadline := time.Now().Add(replicaTimeout)
	var target int64 = -1
	for {
		prim, err := replicationInfo(m)
		if err == nil && target < 0 {
			target, _ = strconv.ParseInt(prim["master_repl_offset"], 10, 64)
		}
		synced, last := target >= 0, ""
		for _, n := range s.Nodes {
			if n == m || !n.running() {
				continue
			}
			info, err := replicationInfo(n)
			off, _ := strconv.ParseInt(info["slave_repl_offset"], 10, 64)
			if err != nil || info["role"] != "slave" || info["master_link_status"] != "up" || off < target {
				synced = false
				last = fmt.Sprintf("replica %s: %v (%v), master %s at offset %d", n.Addr, info, err, m.Addr, target)
			}
		}
		if synced {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("testenv: replicas not in sync after %s: %s", replicaTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StallReplication cuts replica n off from its master while leaving it up
// and, for the Sentinels, fit to be promoted: it makes n authenticate to
// the master with a wrong password (which fails whether or not the master
// wants one) and drops its link. The master goes on taking writes n will
// not have: a failover to n loses them, as a failover to a lagging replica
// does. ResumeReplication undoes it. The Sentinels stop counting n fit
// about ten down-after periods (10 s) after its link went down.
func (s *RedisSentinel) StallReplication(n *Redis) {
	s.tb.Helper()
	c := redis.NewClient(n.Options())
	defer c.Close()
	ctx := context.Background()
	if err := c.ConfigSet(ctx, "masterauth", "rostrum-testenv-stalled").Err(); err != nil {
		s.tb.Fatalf("testenv: CONFIG SET masterauth on %s: %v", n.Addr, err)
	}
	if err := c.Do(ctx, "CLIENT", "KILL", "TYPE", "master").Err(); err != nil {
		s.tb.Fatalf("testenv: CLIENT KILL TYPE master on %s: %v", n.Addr, err)
	}
	deadline := time.Now().Add(replicaTimeout)
	for {
		info, err := replicationInfo(n)
		if err == nil && info["master_link_status"] == "down" {
			return
		}
		if time.Now().After(deadline) {
			s.tb.Fatalf("testenv: the link of replica %s stays up: %v (%v)", n.Addr, info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ResumeReplication restores n's credentials for its master after
// StallReplication (a promoted n needs them to replicate again one day).
func (s *RedisSentinel) ResumeReplication(n *Redis) {
	s.tb.Helper()
	c := redis.NewClient(n.Options())
	defer c.Close()
	if err := c.ConfigSet(context.Background(), "masterauth", n.pass).Err(); err != nil {
		s.tb.Fatalf("testenv: CONFIG SET masterauth on %s: %v", n.Addr, err)
	}
}
