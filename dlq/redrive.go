package dlq

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
)

// Redriven is one record Redrive produced (or, in a dry run, would have).
type Redriven struct {
	Record
	To string // "topic/partition/offset" of the new record; "" in a dry run
}

// Redrive reads the DLQ topic and produces every selected record that was
// not redriven before (all selected ones with sel.Again) back to its source
// topic: key and value unchanged, with the header rostrum-redriven-from
// naming the DLQ record and no other (the DLQ envelope and its
// content-type and rostrum-schema describe the DLQ copy, not a callback;
// a DLQ copy of a record rejected again gets a fresh envelope). After the brokers acknowledged a batch of them it
// appends their markers to the DLQ (see the package documentation). With
// dryRun it only returns what it would produce. Records without a source
// topic header are skipped. cl must be a producing client without consume
// options; its partitioner places the records by key.
func Redrive(ctx context.Context, cl *kgo.Client, topic string, sel Selection, dryRun bool) ([]Redriven, error) {
	recs, err := Read(ctx, cl, topic, sel)
	if err != nil {
		return nil, err
	}
	var todo []Redriven
	for _, r := range recs {
		if r.Topic == "" || (r.Redriven != "" && !sel.Again) {
			continue
		}
		todo = append(todo, Redriven{Record: r})
	}
	if dryRun || len(todo) == 0 {
		return todo, nil
	}
	const chunk = 500 // records per produce round, each followed by its markers
	for start := 0; start < len(todo); start += chunk {
		part := todo[start:min(start+chunk, len(todo))]
		out := make([]*kgo.Record, len(part))
		for i := range part {
			r := &part[i]
			out[i] = &kgo.Record{Topic: r.Topic, Key: r.Key, Value: r.Value,
				Headers: []kgo.RecordHeader{{Key: HeaderRedrivenFrom, Value: []byte(topic + "/" + r.ID())}}}
		}
		res := cl.ProduceSync(ctx, out...)
		if err := res.FirstErr(); err != nil {
			return todo[:start], fmt.Errorf("dlq: redrive to %s: %w", part[0].Topic, err)
		}
		markers := make([]*kgo.Record, len(part))
		for i, pr := range res {
			part[i].To = pr.Record.Topic + "/" + strconv.Itoa(int(pr.Record.Partition)) + "/" + strconv.FormatInt(pr.Record.Offset, 10)
			markers[i] = &kgo.Record{Topic: topic, Key: part[i].Key, Headers: []kgo.RecordHeader{
				{Key: HeaderRedriveOf, Value: []byte(part[i].ID())},
				{Key: HeaderRedrivenTo, Value: []byte(part[i].To)},
				{Key: codec.HeaderContentType, Value: []byte(codec.ContentTypeJSON)},
				{Key: codec.HeaderSchema, Value: []byte(codec.SchemaDLQ)},
			}}
		}
		if err := cl.ProduceSync(ctx, markers...).FirstErr(); err != nil {
			return todo[:start+len(part)], fmt.Errorf("dlq: mark redriven records in %s (they were redriven; a second redrive would repeat them): %w", topic, err)
		}
	}
	return todo, nil
}
