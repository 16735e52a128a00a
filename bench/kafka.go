package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/processor"
)

// createTopics creates the topics that do not exist yet; conn are the
// options that reach the brokers (seeds, TLS, SASL).
func createTopics(ctx context.Context, conn []kgo.Opt, partitions int32, topics ...string) error {
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, -1, nil, topics...)
	if err != nil {
		return fmt.Errorf("bench: create topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("bench: create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}

// topicOf returns the input topic of a record's source.
func topicOf(t processor.Topics, s codec.Source) string {
	switch s {
	case codec.SourceRTC:
		return t.RTC
	case codec.SourceClient:
		return t.Client
	default:
		return t.Signal
	}
}

// producer sends workload records, each stamped with the time it is handed
// to the client (the client gives the Kafka record the same timestamp).
type producer struct {
	cl *kgo.Client
	w  *Workload
	t  processor.Topics

	mu  sync.Mutex
	err error
}

// newProducer returns a producer; conn reach the brokers, linger is the
// client's ProducerLinger.
func newProducer(conn []kgo.Opt, w *Workload, t processor.Topics, linger time.Duration) (*producer, error) {
	cl, err := kgo.NewClient(append(conn, kgo.ProducerLinger(linger),
		kgo.MaxBufferedRecords(1<<16), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))...)
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, w: w, t: t}, nil
}

// send stamps record i with now and produces it; it blocks while the
// client's buffer is full.
func (p *producer) send(ctx context.Context, i int, now time.Time) {
	r := &p.w.Records[i]
	p.w.stamp(r, now.UnixMilli())
	rec := &kgo.Record{Topic: topicOf(p.t, r.Source), Key: p.w.key(r.Room), Value: r.Value, Timestamp: now}
	p.cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
		if err != nil {
			p.mu.Lock()
			if p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
		}
	})
}

// flush waits for every record's acknowledgement and returns the first
// produce error.
func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return fmt.Errorf("bench: produce: %w", p.err)
	}
	return nil
}

func (p *producer) close() { p.cl.Close() }

// preload produces every record of w to the input topics of t and waits for
// the acknowledgements.
func preload(ctx context.Context, conn []kgo.Opt, w *Workload, t processor.Topics) error {
	p, err := newProducer(conn, w, t, 10*time.Millisecond)
	if err != nil {
		return err
	}
	defer p.close()
	for i := range w.Records {
		p.send(ctx, i, time.Now())
	}
	return p.flush(ctx)
}

// outputLatencies reads topic (a ranking.topn topic) from start to end and
// returns, per output record, its publish time (the Kafka record timestamp,
// set by the processor's producer client) minus its ts field (the newest
// event time of the batch for the room), in milliseconds.
func outputLatencies(ctx context.Context, conn []kgo.Opt, topic string, since int64) ([]int64, error) {
	cl, err := kgo.NewClient(append(conn, kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("bench: end offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			left[o.Partition] = o.Offset
		}
	})
	var out []int64
	var o struct {
		TS int64 `json:"ts"`
	}
	for len(left) > 0 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("bench: read %s: %w", topic, err)
		}
		var bad error
		fs.EachRecord(func(r *kgo.Record) {
			if err := json.Unmarshal(r.Value, &o); err != nil {
				bad = fmt.Errorf("bench: output record at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
				return
			}
			if o.TS >= since {
				out = append(out, r.Timestamp.UnixMilli()-o.TS)
			}
			if end, ok := left[r.Partition]; ok && r.Offset+1 >= end {
				delete(left, r.Partition)
			}
		})
		if bad != nil {
			return nil, bad
		}
	}
	return out, nil
}
