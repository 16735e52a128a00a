package testenv

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicaTimeout bounds how long a replica may take to connect to its
// primary and to catch up with it.
const replicaTimeout = 30 * time.Second

// RedisPair is a primary redis-server with one replica (replicaof), local
// processes started for one test, for failover tests: make the replica fall
// behind with StopReplication while the primary keeps taking writes, then
// Failover to it. Client follows the failover as a client behind a virtual
// IP, a proxy or Sentinel would. It is always local, even with
// ROSTRUM_TEST_DOCKER=1.
type RedisPair struct {
	Primary, Replica *Redis

	tb      testing.TB
	current atomic.Pointer[string] // address Client's new connections dial
}

// StartRedisPair starts a primary and a replica of it, both with diskless
// replication without delay (repl-diskless-sync-delay 0), and returns once
// the replica is connected and in sync. The options apply to both servers
// as they do to StartRedis (WithRedisTLS is not supported). Both stop when
// the test ends.
func StartRedisPair(tb testing.TB, opts ...RedisOption) *RedisPair {
	tb.Helper()
	start := func(extra ...string) *Redis {
		r := &Redis{tb: tb, dir: tb.TempDir()}
		for _, o := range opts {
			o(r)
		}
		if r.certs != nil {
			tb.Fatalf("testenv: StartRedisPair does not support WithRedisTLS")
		}
		args := []string{"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
		if r.user != "" {
			args = append(args, "--masteruser", r.user, "--masterauth", r.pass)
		}
		// WithArgs come last, so they still override.
		r.extra = append(append(args, extra...), r.extra...)
		r.launch(FreePort)
		return r
	}
	p := &RedisPair{tb: tb}
	p.Primary = start()
	host, port, _ := net.SplitHostPort(p.Primary.Addr)
	p.Replica = start("--replicaof", host, port)
	p.current.Store(&p.Primary.Addr)
	p.WaitSynced()
	return p
}

// Addr returns the address of the current primary: Primary's, or
// Replica's after Failover.
func (p *RedisPair) Addr() string { return *p.current.Load() }

// Client returns a go-redis client whose connections go to the current
// primary: after Failover, every new connection dials the promoted
// replica, while connections to the old primary fail. It is closed when
// the test ends.
func (p *RedisPair) Client() *redis.Client {
	o := p.Primary.Options()
	o.Addr = "redis-pair" // shown in errors; the dialer below decides
	o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, p.Addr())
	}
	c := redis.NewClient(o)
	p.tb.Cleanup(func() { _ = c.Close() })
	return c
}

// WaitSynced waits until the replica's link to the primary is up and it
// has processed the primary's replication stream up to where it was when
// WaitSynced was called (under load the primary moves on meanwhile),
// failing the test after 30 s.
func (p *RedisPair) WaitSynced() {
	p.tb.Helper()
	deadline := time.Now().Add(replicaTimeout)
	var target int64 = -1
	var last string
	for {
		prim, err1 := replicationInfo(p.Primary)
		if err1 == nil && target < 0 {
			target, _ = strconv.ParseInt(prim["master_repl_offset"], 10, 64)
		}
		repl, err2 := replicationInfo(p.Replica)
		if target >= 0 && err2 == nil && repl["master_link_status"] == "up" {
			if got, err := strconv.ParseInt(repl["slave_repl_offset"], 10, 64); err == nil && got >= target {
				return
			}
		}
		last = fmt.Sprintf("primary %v (%v), replica %v (%v)", prim, err1, repl, err2)
		if time.Now().After(deadline) {
			p.tb.Fatalf("testenv: replica %s not in sync with %s after %s: %s", p.Replica.Addr, p.Primary.Addr, replicaTimeout, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StopReplication makes the replica stop replicating (REPLICAOF NO ONE), as
// a replica cut off from its primary: the primary keeps taking writes that
// the replica will never have. Nothing is written to the replica until
// Failover points Client at it.
func (p *RedisPair) StopReplication() {
	p.tb.Helper()
	c := redis.NewClient(p.Replica.Options())
	defer c.Close()
	if err := c.ReplicaOf(context.Background(), "NO", "ONE").Err(); err != nil {
		p.tb.Fatalf("testenv: REPLICAOF NO ONE on %s: %v", p.Replica.Addr, err)
	}
}

// Failover kills the primary (SIGKILL), promotes the replica (REPLICAOF NO
// ONE, unless StopReplication did already) and points Client at it. What
// the primary took after the replica stopped replicating is lost, as in a
// failover to a replica that lagged.
func (p *RedisPair) Failover() {
	p.tb.Helper()
	p.Primary.Kill()
	p.StopReplication()
	p.current.Store(&p.Replica.Addr)
}

// replicationInfo returns the fields of INFO replication.
func replicationInfo(r *Redis) (map[string]string, error) {
	o := r.Options()
	o.MaxRetries = -1
	c := redis.NewClient(o)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			m[k] = v
		}
	}
	if _, err := strconv.ParseInt(m["master_repl_offset"], 10, 64); err != nil {
		return nil, fmt.Errorf("INFO replication without master_repl_offset: %q", s)
	}
	return m, nil
}
