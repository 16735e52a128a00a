package dlq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Selection says which DLQ records a Read, Summarize or Redrive takes. Its
// zero value selects every record.
type Selection struct {
	Classes []string // reason classes (Record.Class); none: all
	Topics  []string // source topics (rostrum-topic); none: all
	// Partition, when not negative, limits the selection to that DLQ
	// partition, and FromOffset and ToOffset (inclusive; ToOffset < 0: no
	// end) to a range of its offsets.
	Partition            int32
	FromOffset, ToOffset int64
	Since, Until         time.Time // DLQ record timestamps, Since inclusive, Until exclusive; zero: open
	// Again selects records already redriven too; Redrive skips them
	// otherwise. Read and Summarize report them either way.
	Again bool
}

// All selects every record.
func All() Selection { return Selection{Partition: -1, ToOffset: -1} }

func (s *Selection) matches(r *Record) bool {
	switch {
	case len(s.Classes) > 0 && !contains(s.Classes, r.Class):
		return false
	case len(s.Topics) > 0 && !contains(s.Topics, r.Topic):
		return false
	case s.Partition >= 0 && r.Partition != s.Partition:
		return false
	case s.Partition >= 0 && (r.Offset < s.FromOffset || (s.ToOffset >= 0 && r.Offset > s.ToOffset)):
		return false
	case !s.Since.IsZero() && r.Timestamp.Before(s.Since):
		return false
	case !s.Until.IsZero() && !r.Timestamp.Before(s.Until):
		return false
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Read reads the DLQ topic from its start to the end offsets it has when
// Read begins, and returns the selected records in partition and offset
// order, each with Redriven set from the markers. It joins no group and
// commits nothing. cl is a client without consume options; its options
// (brokers, TLS, SASL) are reused by the reader. The DLQ is written without
// transactions, so its offsets are contiguous from the start offset to the
// end: Read returns once it has read each partition's last record, or with
// ctx's error.
func Read(ctx context.Context, cl *kgo.Client, topic string, sel Selection) ([]Record, error) {
	adm := kadm.NewClient(cl)
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("dlq: list offsets of %s: %w", topic, err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("dlq: list offsets of %s: %w", topic, err)
	}
	if err := ends.Error(); err != nil {
		return nil, fmt.Errorf("dlq: topic %s: %w", topic, err)
	}
	from := map[int32]kgo.Offset{}
	left := map[int32]int64{} // partition → end offset still to reach
	ends.Each(func(o kadm.ListedOffset) {
		start := starts[topic][o.Partition].Offset
		if o.Offset > start {
			from[o.Partition] = kgo.NewOffset().At(start)
			left[o.Partition] = o.Offset
		}
	})
	byPart := map[int32][]Record{}
	redriven := map[string]string{}
	if len(left) > 0 {
		rd, err := kgo.NewClient(append(cl.Opts(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
			kgo.FetchIsolationLevel(kgo.ReadUncommitted()))...)
		if err != nil {
			return nil, fmt.Errorf("dlq: reader: %w", err)
		}
		defer rd.Close()
		for len(left) > 0 {
			fs := rd.PollFetches(ctx)
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var ferr error
			fs.EachError(func(t string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					ferr = fmt.Errorf("dlq: read %s/%d: %w", t, p, err)
				}
			})
			if ferr != nil {
				return nil, ferr
			}
			fs.EachRecord(func(kr *kgo.Record) {
				end, ok := left[kr.Partition]
				if !ok || kr.Offset >= end {
					return
				}
				if kr.Offset >= end-1 {
					delete(left, kr.Partition)
				}
				r, of, to, isRecord := parse(kr)
				if !isRecord {
					redriven[of] = to
					return
				}
				byPart[kr.Partition] = append(byPart[kr.Partition], r)
			})
		}
	}
	var out []Record
	for p := int32(0); len(byPart) > 0; p++ {
		recs, ok := byPart[p]
		if !ok {
			continue
		}
		delete(byPart, p)
		for i := range recs {
			r := &recs[i]
			r.Redriven = redriven[r.ID()]
			if sel.matches(r) {
				out = append(out, *r)
			}
		}
	}
	return out, nil
}

// Summary counts DLQ records.
type Summary struct {
	Records  int
	Redriven int            // of Records, already redriven (a marker names them)
	Again    int            // of Records, DLQ copies of redriven records that were rejected again
	ByClass  map[string]int // by reason class
	ByTopic  map[string]int // by source topic
	ByHour   map[string]int // by the hour (UTC, "2006-01-02T15") the record reached the DLQ
}

// Summarize counts recs by reason class, source topic and hour.
func Summarize(recs []Record) Summary {
	s := Summary{ByClass: map[string]int{}, ByTopic: map[string]int{}, ByHour: map[string]int{}}
	for i := range recs {
		r := &recs[i]
		s.Records++
		if r.Redriven != "" {
			s.Redriven++
		}
		if r.RedrivenFrom != "" {
			s.Again++
		}
		s.ByClass[r.Class]++
		topic := r.Topic
		if strings.TrimSpace(topic) == "" {
			topic = "unknown"
		}
		s.ByTopic[topic]++
		s.ByHour[r.Timestamp.UTC().Format("2006-01-02T15")]++
	}
	return s
}
