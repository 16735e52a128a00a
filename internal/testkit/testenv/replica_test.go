package testenv

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestRedisPairFailover checks the failover helper: the replica holds what
// it replicated before StopReplication and nothing after, and Client
// reaches it after Failover.
func TestRedisPairFailover(t *testing.T) {
	p := StartRedisPair(t)
	ctx := context.Background()
	c := p.Client()
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.WaitSynced()
	p.StopReplication()
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	p.Failover()
	if p.Addr() != p.Replica.Addr {
		t.Fatalf("Addr %s after Failover, want the replica's %s", p.Addr(), p.Replica.Addr)
	}
	if got, err := c.Get(ctx, "before").Result(); err != nil || got != "1" {
		t.Fatalf("after failover: before = %q, %v; want 1", got, err)
	}
	if err := c.Get(ctx, "after").Err(); err != redis.Nil {
		t.Fatalf("after failover: the write made after replication stopped is there (%v)", err)
	}
	if err := c.Set(ctx, "new", "1", 0).Err(); err != nil {
		t.Fatalf("write to the promoted replica: %v", err)
	}
}
