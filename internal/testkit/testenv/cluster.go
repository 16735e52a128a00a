package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// clusterNodes is the number of masters in a test cluster.
	clusterNodes = 3
	// clusterTimeout bounds cluster creation and WaitOK.
	clusterTimeout = 30 * time.Second
	// clusterReload is how often a test ClusterClient reloads the slot map.
	// go-redis's default of 60 s leaves a client failing for about a minute
	// after a node dies or comes back.
	clusterReload = 200 * time.Millisecond
)

// clusterArgs make a redis-server a Redis Cluster master. A node notices a
// dead peer after the 2 s node timeout. With TLS the cluster bus and
// replication links use it too, so no byte between nodes goes in clear; the
// bus then listens on the TLS port + 10000, which freeClusterPort keeps free
// as it does for a plain port.
func clusterArgs(tls bool) []string {
	a := []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "2000",
	}
	if tls {
		a = append(a, "--tls-cluster", "yes", "--tls-replication", "yes")
	}
	return a
}

// RedisCluster is a three-master Redis Cluster (no replicas) of local
// redis-server processes started for one test, each on its own free loopback
// port and directory, with persistence off unless WithPersistence. The slots
// are split evenly between the masters as redis-cli assigns them. It is
// always local, even with ROSTRUM_TEST_DOCKER=1.
type RedisCluster struct {
	// Addrs holds host:port of each master, in Node order.
	Addrs []string

	tb    testing.TB
	nodes []*Redis
}

// StartRedisCluster starts three cluster-enabled redis-server masters, joins
// them with `redis-cli --cluster create`, and returns once every node reports
// cluster_state:ok. All processes stop when the test ends. It fails the test
// when redis-server or redis-cli is missing (with InstallHint) or the cluster
// is not up within 30 s. Starting takes about 2 s, most of it redis-cli
// waiting for the nodes to agree.
//
// The options apply to every node as they do to StartRedis. With
// WithRedisTLS the nodes speak TLS only, to clients and to each other
// (cluster bus and replication); with WithACLUser every client must AUTH as
// that user, while the cluster bus needs none. Client, WaitOK and each
// Node's Client and Restart connect accordingly.
func StartRedisCluster(tb testing.TB, opts ...RedisOption) *RedisCluster {
	tb.Helper()
	cli := lookBinary(tb, "redis-cli")
	c := &RedisCluster{tb: tb}
	for i := range clusterNodes {
		n := &Redis{tb: tb, dir: tb.TempDir(), host: "127.0.0.1"}
		for _, o := range opts {
			o(n)
		}
		args := clusterArgs(n.certs != nil)
		if n.distinct {
			n.host = fmt.Sprintf("127.0.0.%d", i+1)
			skipWithoutLoopback(tb, n.host)
			// A node learns its own address from the connections its peers
			// make to it; announcing it leaves nothing to chance, so CLUSTER
			// SLOTS hands clients this very address.
			args = append(args, "--cluster-announce-ip", n.host)
			if n.certs != nil {
				n.certFile, n.keyFile = n.certs.ServerCertFor(tb, net.ParseIP(n.host))
			}
		}
		// WithArgs come last, so they still override.
		n.extra = append(args, n.extra...)
		host := n.host
		n.launch(func(tb testing.TB) int { return freeClusterPort(tb, host) })
		c.nodes = append(c.nodes, n)
		c.Addrs = append(c.Addrs, n.Addr)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	n := c.nodes[0]
	var args []string
	if n.certs != nil {
		args = append(args, "--tls", "--cacert", n.certs.CAFile, "--cert", n.certs.ClientCertFile, "--key", n.certs.ClientKeyFile)
	}
	if n.user != "" {
		args = append(args, "--user", n.user)
	}
	args = append(append(args, "--cluster", "create"), c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	cmd := exec.CommandContext(ctx, cli, args...)
	if n.user != "" {
		// The password goes in the environment rather than -a, which
		// would show it in the process list and make redis-cli warn.
		cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+n.pass)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("testenv: redis-cli --cluster create %s: %v; output:\n%s", strings.Join(c.Addrs, " "), err, out)
	}
	c.WaitOK()
	return c
}

// Node returns the i-th master (0 ≤ i < 3) for fault tests: Kill and
// Restart it, or talk to it alone with its Client (which follows no
// redirects).
func (c *RedisCluster) Node(i int) *Redis {
	c.tb.Helper()
	if i < 0 || i >= len(c.nodes) {
		c.tb.Fatalf("testenv: cluster node %d out of range [0, %d)", i, len(c.nodes))
	}
	return c.nodes[i]
}

// Client returns a go-redis cluster client seeded with every node, checking
// each node's certificate (WithRedisTLS) against that node's host, and
// reloading the slot map every 200 ms, so that it recovers within a second
// of a topology change rather than go-redis's default minute. It is closed
// when the test ends.
func (c *RedisCluster) Client() *redis.ClusterClient {
	n := c.nodes[0].Options() // every node has the same user and TLS
	if n.TLSConfig != nil {
		// Without a ServerName, tls.Dial checks each node against the host
		// dialled: with WithDistinctHosts, node 0's would fit no other.
		n.TLSConfig.ServerName = ""
	}
	cl := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                      c.Addrs,
		Username:                   n.Username,
		Password:                   n.Password,
		TLSConfig:                  n.TLSConfig,
		ClusterStateReloadInterval: clusterReload,
	})
	c.tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

// WaitOK waits until every node reports cluster_state:ok and knows all three
// nodes, failing the test with each node's last CLUSTER INFO after 30 s. Use
// it after Restart of a node: the others keep the cluster failed for up to a
// few node timeouts (2 s each) after a dead master comes back.
func (c *RedisCluster) WaitOK() {
	c.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	last := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		o := n.Options()
		o.MaxRetries = -1
		rc := redis.NewClient(o)
		for {
			info, err := rc.ClusterInfo(ctx).Result()
			if err != nil {
				info = err.Error()
			}
			last[i] = info
			if clusterOK(info) {
				break
			}
			select {
			case <-ctx.Done():
				_ = rc.Close()
				c.tb.Fatalf("testenv: Redis Cluster not ok after %s; CLUSTER INFO of each node:\n%s",
					clusterTimeout, strings.Join(last, "\n---\n"))
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = rc.Close()
	}
}

// clusterOK reports whether CLUSTER INFO output shows a healthy cluster of
// clusterNodes nodes.
func clusterOK(info string) bool {
	var ok, known bool
	for _, line := range strings.Split(info, "\n") {
		switch strings.TrimSpace(line) {
		case "cluster_state:ok":
			ok = true
		case "cluster_known_nodes:" + strconv.Itoa(clusterNodes):
			known = true
		}
	}
	return ok && known
}

// skipWithoutLoopback skips the test when host, a loopback address other
// than 127.0.0.1, cannot be bound: only some systems (Linux) route all of
// 127.0.0.0/8 to the loopback interface.
func skipWithoutLoopback(tb testing.TB, host string) {
	tb.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		tb.Skipf("testenv: WithDistinctHosts needs loopback address %s: %v", host, err)
	}
	_ = l.Close()
}
