package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Lookup tells a recovery whether a record left in the outbox is already on
// its topic (see outbox.go).
type Lookup interface {
	// Contains reports whether topic holds a record with exactly key and
	// value among the records stamped at or after since. It reads only
	// those records, up to the topic's end when it is called.
	Contains(ctx context.Context, topic string, key, value []byte, since time.Time) (bool, error)
}

// KafkaLookup is the Lookup of a franz-go client: it lists the offsets of
// since (ListOffsets by timestamp) and the end offsets, and reads each
// partition between the two with a short-lived consumer built from the
// client's options (brokers, TLS, SASL). Lookups are rare (one per record a
// crash left behind), so the consumer is not kept.
type KafkaLookup struct{ cl *kgo.Client }

var _ Lookup = (*KafkaLookup)(nil)

// NewKafkaLookup returns the Lookup of cl, which stays the caller's.
func NewKafkaLookup(cl *kgo.Client) *KafkaLookup { return &KafkaLookup{cl: cl} }

// Contains implements Lookup. Every partition is read, not only the one the
// producer's partitioner picks for key: the commands and layout topics carry
// few records, and so the answer holds also when partitions were added or
// the partitioner differs between the writer and the recovery.
func (l *KafkaLookup) Contains(ctx context.Context, topic string, key, value []byte, since time.Time) (bool, error) {
	adm := kadm.NewClient(l.cl)
	starts, err := adm.ListOffsetsAfterMilli(ctx, since.UnixMilli(), topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return false, fmt.Errorf("control: list offsets of %s after %d: %w", topic, since.UnixMilli(), err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return false, fmt.Errorf("control: list end offsets of %s: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	end := map[int32]int64{} // partitions still to read → their end offset
	ends.Each(func(o kadm.ListedOffset) {
		s, ok := starts.Lookup(topic, o.Partition)
		if !ok || s.Offset < 0 || s.Offset >= o.Offset {
			return // nothing stamped at or after since
		}
		from[o.Partition] = kgo.NewOffset().At(s.Offset)
		end[o.Partition] = o.Offset
	})
	if len(end) == 0 {
		return false, nil
	}
	rd, err := kgo.NewClient(append(l.cl.Opts(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}))...)
	if err != nil {
		return false, fmt.Errorf("control: read %s: %w", topic, err)
	}
	defer rd.Close()
	for len(end) > 0 {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return false, fmt.Errorf("control: read %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return false, fmt.Errorf("control: read %s: %w", topic, ferr)
		}
		found := false
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				if r.Offset >= end[p.Partition] {
					delete(end, p.Partition) // written after the lookup began
					break
				}
				if bytes.Equal(r.Key, key) && bytes.Equal(r.Value, value) {
					found = true
				}
				if r.Offset+1 >= end[p.Partition] {
					delete(end, p.Partition)
				}
			}
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}

// stampOf returns the time a record was written at, its "at" field (Unix ms
// on the Redis primary's clock; command and layout records both carry it).
// Records are produced with it as their timestamp, so a recovery finds them
// by it. A record without it gives the Unix epoch: the lookup then reads
// the topic from its start.
func stampOf(record string) time.Time {
	var r struct {
		At int64 `json:"at"`
	}
	if json.Unmarshal([]byte(record), &r) != nil || r.At <= 0 {
		return time.UnixMilli(0)
	}
	return time.UnixMilli(r.At)
}
