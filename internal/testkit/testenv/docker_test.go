//go:build docker

package testenv

import (
	"context"
	"testing"
)

// TestDocker runs Redis and Kafka in containers. It needs the docker build
// tag, ROSTRUM_TEST_DOCKER=1 and a reachable Docker engine, and skips with a
// message otherwise.
func TestDocker(t *testing.T) {
	if !dockerEnabled() {
		t.Skipf("set %s=1 to run Redis and Kafka in containers", dockerEnv)
	}
	r := StartRedis(t)
	ctx := context.Background()
	rc := r.Client()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET on container Redis %s: %v", r.Addr, err)
	}
	if got, err := rc.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET on container Redis = %q, %v; want v", got, err)
	}

	k := StartKafka(t, WithTopics(2, "events"))
	if k.Cluster != nil {
		t.Fatal("container-backed Kafka has a kfake Cluster")
	}
	k.Produce("events", []byte("k"), []byte("v"))
	if rs := k.ReadAll("events"); len(rs) != 1 || string(rs[0].Value) != "v" {
		t.Fatalf("ReadAll from container Kafka = %v; want one record v", rs)
	}
}
