package processor_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// BenchmarkPipeline measures the whole pipeline (decode, WAL with fsync,
// Redis apply, stable merge, publish, commit) over a preloaded trace of
// b.N records, against kfake and a real redis-server on this machine.
func BenchmarkPipeline(b *testing.B) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(b, testenv.WithTopics(3, topics.All()...))
	r := testenv.StartRedis(b)
	cfg := trace.DefaultConfig(9)
	cfg.Records = max(b.N, 1000)
	cfg.Rooms = 200
	recs := trace.Generate(cfg)
	var events int
	cl := k.Client()
	for _, tr := range recs {
		events += len(tr.Events)
		cl.Produce(context.Background(), kafkaRecord(tr), nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	store, _ := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers})
	log, err := wal.Open(b.TempDir(), wal.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{Brokers: k.Seeds, Env: env,
		Decode: codec.DecodeConfig{MaxFutureSkew: time.Hour}, KafkaOpts: testenv.FastGroupOpts()}, store, log)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for p.Stats().Records.Load() < int64(len(recs)) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(events)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(len(recs))/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(len(recs))/float64(p.Stats().Batches.Load()), "records/batch")
}
