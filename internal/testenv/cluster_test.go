package testenv

import (
	"context"
	"fmt"
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
