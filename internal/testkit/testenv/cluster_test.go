package testenv

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func setKeys(t *testing.T, c *redis.ClusterClient, n int) {
	t.Helper()
	for i := range n {
		if err := c.Set(context.Background(), fmt.Sprintf("key-%d", i), i, 0).Err(); err != nil {
			t.Fatalf("SET key-%d: %v", i, err)
		}
	}
}

func checkKeys(t *testing.T, c *redis.ClusterClient, n int) {
	t.Helper()
	for i := range n {
		got, err := c.Get(context.Background(), fmt.Sprintf("key-%d", i)).Int()
		if err != nil || got != i {
			t.Fatalf("GET key-%d = %d, %v; want %d", i, got, err, i)
		}
	}
}

func TestRedisCluster(t *testing.T) {
	rc := StartRedisCluster(t)
	ctx := context.Background()
	c := rc.Client()

	setKeys(t, c, 100)
	checkKeys(t, c, 100)

	// The keys are spread over the slots of all three masters.
	var total int64
	for i := range len(rc.Addrs) {
		n, err := rc.Node(i).Client().DBSize(ctx).Result()
		if err != nil {
			t.Fatalf("DBSIZE on node %d: %v", i, err)
		}
		if n == 0 {
			t.Errorf("node %d holds no keys; want the 100 keys spread over all masters", i)
		}
		total += n
	}
	if total != 100 {
		t.Errorf("nodes hold %d keys in all; want 100", total)
	}

	// A script may touch several keys when they share one hash tag.
	const script = `redis.call('SET', KEYS[1], ARGV[1])
redis.call('INCRBY', KEYS[2], ARGV[2])
return redis.call('MGET', KEYS[1], KEYS[2])`
	got, err := c.Eval(ctx, script, []string{"{room-1}:top", "{room-1}:seq"}, "alice", 7).StringSlice()
	if err != nil {
		t.Fatalf("EVAL over {room-1}: %v", err)
	}
	if len(got) != 2 || got[0] != "alice" || got[1] != "7" {
		t.Fatalf("EVAL over {room-1} = %q; want [alice 7]", got)
	}
}

func TestRedisClusterNodeRestart(t *testing.T) {
	rc := StartRedisCluster(t)
	c := rc.Client()
	setKeys(t, c, 100)

	rc.Node(1).Kill()
	rc.Node(1).Restart(true) // after Kill: back with its last snapshot, which is none
	rc.WaitOK()
	var lost int
	for i := range 100 {
		err := c.Get(context.Background(), fmt.Sprintf("key-%d", i)).Err()
		switch err {
		case nil:
		case redis.Nil:
			lost++
		default:
			t.Fatalf("GET key-%d after node restart: %v", i, err)
		}
	}
	if lost == 0 || lost == 100 {
		t.Fatalf("%d of 100 keys lost after a master lost its data; want those of one master only", lost)
	}

	setKeys(t, c, 100)
	rc.Node(2).Restart(true)
	rc.WaitOK()
	checkKeys(t, c, 100)
}

// TestRedisClusterACLAndTLS checks a cluster started WithACLUser and
// WithRedisTLS: its nodes form the cluster over a TLS bus, the cluster
// client reaches every node's slots, a node refuses what lacks TLS or AUTH,
// and a restarted node rejoins.
func TestRedisClusterACLAndTLS(t *testing.T) {
	certs := NewCerts(t)
	rc := StartRedisCluster(t, WithACLUser("app", "s3cret pass"), WithRedisTLS(certs, true))
	ctx := context.Background()
	c := rc.Client()
	setKeys(t, c, 100)
	checkKeys(t, c, 100)

	for i := range len(rc.Addrs) {
		n := rc.Node(i).Client()
		if k, err := n.DBSize(ctx).Result(); err != nil || k == 0 {
			t.Errorf("node %d: DBSIZE = %d, %v; want some of the 100 keys on every master", i, k, err)
		}
		if who, err := n.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != "app" {
			t.Errorf("node %d: ACL WHOAMI = %q, %v; want app", i, who, err)
		}
		if got, err := n.ConfigGet(ctx, "tls-cluster").Result(); err != nil || got["tls-cluster"] != "yes" {
			t.Errorf("node %d: CONFIG GET tls-cluster = %v, %v; want yes", i, got, err)
		}
	}

	noAuth := rc.Node(0).Options()
	noAuth.Username, noAuth.Password = "", ""
	if err := ping(noAuth); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("without AUTH: %v; want NOAUTH", err)
	}
	plain := rc.Node(0).Options()
	plain.TLSConfig = nil
	if err := ping(plain); err == nil {
		t.Error("plain TCP to a node worked; want an error")
	}

	rc.Node(1).Restart(true)
	rc.WaitOK()
	checkKeys(t, c, 100)
}

// TestRedisClusterDistinctHosts checks a TLS cluster started
// WithDistinctHosts: each master listens on and announces its own loopback
// address, presents a certificate naming that address only (so checking it
// against another host fails), and the cluster client, which checks each
// node against its own host, reaches all of them.
func TestRedisClusterDistinctHosts(t *testing.T) {
	certs := NewCerts(t)
	rc := StartRedisCluster(t, WithACLUser("app", "s3cret pass"), WithRedisTLS(certs, true), WithDistinctHosts())
	ctx := context.Background()

	want := map[string]bool{}
	for i, addr := range rc.Addrs {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host != fmt.Sprintf("127.0.0.%d", i+1) {
			t.Fatalf("node %d at %s; want host 127.0.0.%d", i, addr, i+1)
		}
		want[addr] = true
	}
	// What the cluster tells clients, which then dial these addresses.
	shards, err := rc.Node(0).Client().ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) != len(rc.Addrs) {
		t.Fatalf("CLUSTER SHARDS lists %d shards; want %d", len(shards), len(rc.Addrs))
	}
	for _, s := range shards {
		for _, n := range s.Nodes {
			if a := net.JoinHostPort(n.Endpoint, strconv.FormatInt(n.TLSPort, 10)); !want[a] {
				t.Errorf("CLUSTER SHARDS announces %s; want one of %v", a, rc.Addrs)
			}
		}
	}

	for i := 1; i < len(rc.Addrs); i++ {
		o := rc.Node(i).Options()
		o.TLSConfig.ServerName = "127.0.0.1"
		err := ping(o)
		var hostErr x509.HostnameError
		if !errors.As(err, &hostErr) {
			t.Errorf("node %d checked against 127.0.0.1: %v; want a certificate host name error", i, err)
		}
	}

	c := rc.Client()
	setKeys(t, c, 100)
	checkKeys(t, c, 100)
	for i := range len(rc.Addrs) {
		if k, err := rc.Node(i).Client().DBSize(ctx).Result(); err != nil || k == 0 {
			t.Errorf("node %d: DBSIZE = %d, %v; want some of the 100 keys on every master", i, k, err)
		}
	}

	// A node restarts on its own address and certificate.
	rc.Node(2).Restart(true)
	rc.WaitOK()
	checkKeys(t, c, 100)
}
