package processor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// BenchmarkDecodeFold measures the per-batch CPU work before Redis: decode
// and validate every record, then fold the events per room, partition and
// member. One op is one batch of 1000 records from a meeting trace.
func BenchmarkDecodeFold(b *testing.B) {
	cfg := trace.DefaultConfig(11)
	cfg.Records, cfg.Rooms, cfg.MaxMembers = 1000, 20, 100
	cfg.BadRate, cfg.DupRate, cfg.UnknownRate = 0, 0, 0
	topics := TopicsFor("", "bench")
	var recs []*kgo.Record
	events := 0
	for i, r := range trace.Generate(cfg) {
		events += len(r.Events)
		recs = append(recs, &kgo.Record{Topic: "bench.callbacks." + r.Topic, Partition: int32(i % 3), Offset: int64(i), Value: r.Value})
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

// BenchmarkFold measures the fold alone, over events decoded beforehand:
// once the reusable folder has grown to the batch, folding allocates only
// a few per-batch index slices and maps, nothing per event. One op is one
// batch of 1000 records.
func BenchmarkFold(b *testing.B) {
	cfg := trace.DefaultConfig(11)
	cfg.Records, cfg.Rooms, cfg.MaxMembers = 1000, 20, 100
	cfg.BadRate, cfg.DupRate, cfg.UnknownRate = 0, 0, 0
	dec := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: 1000 * time.Hour})
	type rec struct {
		part int32
		evs  []codec.Event
	}
	var recs []rec
	events := 0
	for i, r := range trace.Generate(cfg) {
		evs, err := dec.Decode(nil, r.Value, codec.SourceRTC, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		events += len(evs)
		recs = append(recs, rec{int32(i % 3), evs})
	}
	var f folder
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.reset()
		for i, r := range recs {
			f.add("bench.callbacks.rtc", r.part, int64(i), 0, r.evs)
		}
		if len(f.build()) == 0 {
			b.Fatal("nothing folded")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}
