package testenv

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisSentinelFailovers checks the Sentinel helpers: a failover client
// follows a SENTINEL FAILOVER with everything written before it, and a kill
// of a master whose replica was stalled promotes that replica without the
// writes made after the stall, as a failover to a lagging replica does.
func TestRedisSentinelFailovers(t *testing.T) {
	s := StartRedisSentinel(t, WithSentinelAuth("", "sentinel-secret"))
	ctx := context.Background()
	c := s.Client()
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	first := s.Master()
	second := s.Failover()
	if second == first {
		t.Fatalf("SENTINEL FAILOVER left the master at %s", first.Addr)
	}
	if got, err := c.Get(ctx, "before").Result(); err != nil || got != "1" {
		t.Fatalf("after a clean failover: before = %q, %v; want 1", got, err)
	}
	if err := c.Set(ctx, "between", "1", 0).Err(); err != nil {
		t.Fatalf("write to the promoted replica through the failover client: %v", err)
	}
	// The old master is now the replica: stall it, write, kill the master.
	s.WaitReplicasSynced()
	s.StallReplication(first)
	if err := c.Set(ctx, "lost", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.KillMaster()
	third := s.WaitNewMaster(second.Addr)
	if third != first {
		t.Fatalf("new master %s, want the only replica %s", third.Addr, first.Addr)
	}
	s.ResumeReplication(first)
	if got, err := c.Get(ctx, "between").Result(); err != nil || got != "1" {
		t.Fatalf("after the kill: between = %q, %v; want 1", got, err)
	}
	if err := c.Get(ctx, "lost").Err(); err != redis.Nil {
		t.Fatalf("after the kill: the write made after the stall is there (%v)", err)
	}
}
