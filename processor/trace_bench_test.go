package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// BenchmarkDecodeFoldTraced is BenchmarkDecodeFold over records as the
// gateway writes them: its three headers and a traceparent on each, which
// the fold keeps per room (trace.go). With no tracer it must allocate no
// more than BenchmarkDecodeFold: nothing per event or per record.
func BenchmarkDecodeFoldTraced(b *testing.B) {
	cfg := trace.DefaultConfig(11)
	cfg.Records, cfg.Rooms, cfg.MaxMembers = 1000, 20, 100
	cfg.BadRate, cfg.DupRate, cfg.UnknownRate = 0, 0, 0
	topics := TopicsFor("", "bench")
	headers := []kgo.RecordHeader{
		{Key: "rostrum-source", Value: []byte("rtc")},
		{Key: "rostrum-received-at", Value: []byte("1764213600000")},
		{Key: "rostrum-request-id", Value: []byte("0123456789ab-1")},
		{Key: "traceparent", Value: []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")},
	}
	var recs []*kgo.Record
	events := 0
	for i, r := range trace.Generate(cfg) {
		events += len(r.Events)
		recs = append(recs, &kgo.Record{Topic: "bench.callbacks." + r.Topic, Partition: int32(i % 3), Offset: int64(i), Value: r.Value, Headers: headers})
	}
	p := &Processor{cfg: Config{Env: "bench"}, topics: topics, boards: noBoards{}}
	p.cfg.withDefaults()
	p.dec = codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: 1000 * time.Hour})
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bt := p.nextBatch(recs)
		bt.decode(now)
		if len(bt.dlq) != 0 {
			b.Fatalf("%d records rejected", len(bt.dlq))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}
