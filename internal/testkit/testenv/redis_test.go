package testenv

import (
	"context"
	"testing"
)

func TestRedisRestart(t *testing.T) {
	r := StartRedis(t)
	ctx := context.Background()
	c := r.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.Restart(true)
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after restart with data: got %q, %v; want v", got, err)
	}
	r.Restart(false)
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 0 {
		t.Fatalf("after restart empty: dbsize %d, %v; want 0", n, err)
	}
}

func TestRedisKillSkipsForContainer(t *testing.T) {
	var reached bool
	t.Run("container", func(t *testing.T) {
		r := &Redis{Addr: "127.0.0.1:1", tb: t} // as StartRedis returns it when container-backed
		r.Kill()
		reached = true
	})
	if reached {
		t.Fatal("Kill went on without a local redis-server; want the test skipped")
	}
}
