package processor

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// recordHeaders returns the two headers of every record rostrum produces
// (codec.HeaderContentType, codec.HeaderSchema), for a record of kind
// schema (docs/DESIGN.md §2).
func recordHeaders(schema string) []kgo.RecordHeader {
	return []kgo.RecordHeader{
		{Key: codec.HeaderContentType, Value: []byte(codec.ContentTypeJSON)},
		{Key: codec.HeaderSchema, Value: []byte(schema)},
	}
}

// encodeOutput renders the output record of room st with the new stable list
// (seq = st.Seq+1). Every member of list is in st.Top or, kept by the
// hysteresis, in st.Stable with a score in st.StableScores; the scores
// carry all the fields. ts is the newest event time of the batch for the
// room (or the deadline the timer stepped it at); a room re-merged without
// events of its own (ts 0) keeps the time of its newest member.
func (p *Processor) encodeOutput(st *ranking.RoomState, list []string, ts int64) ([]byte, error) {
	var buf [16]float64
	scores := buf[:0]
	for _, id := range list {
		scores = append(scores, scoreOf(st, id))
	}
	return p.cfg.Meeting.AppendOutput(make([]byte, 0, 64+96*len(list)), st.Room, st.Seq+1, ts, list, scores)
}

// topnHeaders are the headers of every output record, built once: the
// client only reads a record's headers, so all output records share this
// slice (an append to it copies, its capacity being its length). Never
// written: an output that carries a traceparent gets a copy of its own
// (trace.go), which kotel's produce hook may write.
var topnHeaders = recordHeaders(codec.SchemaTopN)

// outputRecord wraps an encoded output for the topn topic, keyed by room so
// that one room's outputs stay in order on one partition, with the headers
// of a ranking.topn/1 record.
func (p *Processor) outputRecord(room string, value []byte) *kgo.Record {
	return &kgo.Record{Topic: p.topics.TopN, Key: []byte(room), Value: value, Headers: topnHeaders[:len(topnHeaders):len(topnHeaders)]}
}

// publish produces the output records and returns once the brokers
// acknowledged every one, or with the first error. For each record whose
// room is in oldest it observes the publish latency, from that Kafka
// timestamp to the record's own acknowledgement; only when all succeeded, so
// that a retried publish is not observed twice.
func (p *Processor) publish(ctx context.Context, recs []*kgo.Record, oldest map[string]time.Time) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		took  = make([]time.Duration, 0, len(recs))
	)
	wg.Add(len(recs))
	for _, r := range recs {
		p.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			defer wg.Done()
			acked := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			if t, ok := oldest[string(r.Key)]; ok {
				took = append(took, acked.Sub(t))
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	for _, d := range took {
		p.cfg.Observer.PublishLatency(d)
	}
	return nil
}

// dlqRecord copies a rejected record to the DLQ with its reason and origin.
// A record redriven from the DLQ (`rostrum dlq redrive`) that is rejected
// again keeps its rostrum-redriven-from header, so its new DLQ copy says so.
// A rejected record with a traceparent gives its copy one of the same trace,
// a hop of its own (trace.go). No other header of the rejected record is
// copied: the envelope (callbacks.dlq/1) is the DLQ copy's own, made afresh
// for every rejection.
func (p *Processor) dlqRecord(r *kgo.Record, reason string) *kgo.Record {
	d := p.newDLQRecord(r, reason)
	for _, h := range r.Headers {
		if h.Key == codec.HeaderRedrivenFrom {
			d.Headers = append(d.Headers, h)
		}
	}
	p.traceDLQ(d, r, reason)
	return d
}

// newDLQRecord is the DLQ copy of r: its key and value as received, the
// envelope first (rostrum-error is the first header), then the two headers
// of every record rostrum produces. The value keeps the callback topics'
// content type, application/json, even when the reason is that it does not
// parse (docs/topics/dlq.md).
func (p *Processor) newDLQRecord(r *kgo.Record, reason string) *kgo.Record {
	return &kgo.Record{
		Topic: p.topics.DLQ,
		Key:   r.Key,
		Value: r.Value,
		Headers: append([]kgo.RecordHeader{
			{Key: codec.HeaderError, Value: []byte(reason)},
			{Key: codec.HeaderTopic, Value: []byte(r.Topic)},
			{Key: codec.HeaderPartition, Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
			{Key: codec.HeaderOffset, Value: strconv.AppendInt(nil, r.Offset, 10)},
		}, recordHeaders(codec.SchemaDLQ)...),
	}
}

// scoreOf returns the current score of id, a member of room st's raw top-N
// or of its stored stable list (0 when it is in neither).
func scoreOf(st *ranking.RoomState, id string) float64 {
	for _, m := range st.Top {
		if m.UserID == id {
			return m.Score
		}
	}
	for i, m := range st.Stable {
		if m == id && i < len(st.StableScores) && st.StableScores[i] != ranking.Unranked {
			return st.StableScores[i]
		}
	}
	return 0
}
