package processor_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// TestRedisFailover fails Redis over to a replica that is behind, during
// load: the processor writes to a primary with one replica; midway the
// replica stops replicating (cut off from its primary) while the primary
// keeps taking the processor's writes; later the primary dies and the
// replica is promoted, and the processor's client follows it. The promoted
// replica keeps the generation marker, so only the state tokens can tell
// that it went back in time: the processor must find an older token of its
// own in a room (sink.ErrRedisRolledBack), rebuild from its WAL and the
// output topic, and end in the model's state, with no seq published twice
// with different content.
func TestRedisFailover(t *testing.T) {
	w := newWorld(t, e2eTrace(10, 20000))
	pair := testenv.StartRedisPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	core, logs := observer.New(zapcore.WarnLevel)
	lg := zap.New(zapcore.NewTee(zaptest.NewLogger(t).Core(), core))
	store, err := sink.New(pair.Client(), sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers, Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	log, err := wal.Open(t.TempDir(), wal.Config{Logger: lg})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, err := processor.New(ctx, processor.Config{
		Brokers: w.kafka.Seeds, Env: env, MaxPollRecords: 500,
		Decode:    codec.DecodeConfig{MaxFutureSkew: time.Minute},
		KafkaOpts: testenv.FastGroupOpts(),
		Logger:    lg,
		Retry:     processor.RetryConfig{Backoff: 20 * time.Millisecond},
	}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	feed := newFeeder(w)
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitRecords := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for p.Stats().Records.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("processed %d records, want %d within a minute", p.Stats().Records.Load(), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	feed.to(5000)
	waitRecords(5000)
	pair.WaitSynced()
	pair.StopReplication()
	feed.to(11000) // applied to the primary only
	waitRecords(11000)
	// The replica is behind: rooms whose state token moved on the primary
	// since replication stopped.
	primary, replica := pair.Primary.Client(), pair.Replica.Client()
	behind := 0
	for _, room := range w.model.Rooms() {
		k := sink.RoomKeys(env, room).Stable
		if primary.HGet(ctx, k, "mv").Val() != replica.HGet(ctx, k, "mv").Val() {
			behind++
		}
	}
	if behind == 0 {
		t.Fatal("the replica is not behind the primary in any room; the failover would test nothing")
	}
	produced := feed.rest() // the failover happens while these stream in
	resets := p.Stats().RedisResets.Load()
	pair.Failover()
	t.Logf("failed over to a replica behind in %d of %d rooms", behind, len(w.model.Rooms()))

	w.waitProduced(produced)
	w.waitCaughtUp(2 * time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if logs.FilterMessageSnippet("redis went back in time").Len() == 0 {
		t.Fatal("the failover to a replica behind was not detected as Redis going back in time")
	}
	if p.Stats().RedisResets.Load() <= resets {
		t.Fatal("Redis went back in time but no rebuild ran")
	}
	w.rc = pair.Replica.Client() // the check reads the promoted replica
	w.check()
}
