package dlq

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
)

// The headers of DLQ records and of redriven records (see the package
// documentation); the names are codec's, which the processor writes them by.
const (
	HeaderError        = codec.HeaderError
	HeaderTopic        = codec.HeaderTopic
	HeaderPartition    = codec.HeaderPartition
	HeaderOffset       = codec.HeaderOffset
	HeaderRedrivenFrom = codec.HeaderRedrivenFrom
	HeaderRedriveOf    = codec.HeaderRedriveOf
	HeaderRedrivenTo   = codec.HeaderRedrivenTo
)

// Record is one record of the DLQ with its headers read.
type Record struct {
	Partition int32     // in the DLQ
	Offset    int64     // in the DLQ
	Timestamp time.Time // when it was sent to the DLQ
	Key       []byte
	Value     []byte
	Headers   []kgo.RecordHeader

	Reason          string // rostrum-error
	Class           string // the reason's class, as the metric label rostrum_dlq_records_total{reason} says it
	Topic           string // rostrum-topic: where it was consumed from
	SourcePartition int32  // rostrum-partition (-1 when absent)
	SourceOffset    int64  // rostrum-offset (-1 when absent)
	RedrivenFrom    string // rostrum-redriven-from: it was rejected again after a redrive

	// Redriven says where the record was redriven to ("topic/partition/
	// offset", from its marker); empty when it was never redriven.
	Redriven string
}

// ID is the record's place in the DLQ, "partition/offset", as markers and
// the rostrum-redriven-from header name it.
func (r *Record) ID() string {
	return strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

func header(hs []kgo.RecordHeader, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// parse reads a consumed DLQ record; ok is false for a marker, whose
// redrive-of and redriven-to it returns instead.
func parse(kr *kgo.Record) (r Record, markerOf, markerTo string, ok bool) {
	if of, isMarker := header(kr.Headers, HeaderRedriveOf); isMarker {
		to, _ := header(kr.Headers, HeaderRedrivenTo)
		return Record{}, of, to, false
	}
	r = Record{Partition: kr.Partition, Offset: kr.Offset, Timestamp: kr.Timestamp, Key: kr.Key, Value: kr.Value,
		Headers: kr.Headers, SourcePartition: -1, SourceOffset: -1}
	r.Reason, _ = header(kr.Headers, HeaderError)
	r.Topic, _ = header(kr.Headers, HeaderTopic)
	if v, ok := header(kr.Headers, HeaderPartition); ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil {
			r.SourcePartition = int32(n)
		}
	}
	if v, ok := header(kr.Headers, HeaderOffset); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			r.SourceOffset = n
		}
	}
	r.RedrivenFrom, _ = header(kr.Headers, HeaderRedrivenFrom)
	r.Class = Class(r.Reason)
	return r, "", "", true
}

// Class returns the class of a DLQ reason: the label the processor counts it
// under in rostrum_dlq_records_total{reason}. It is read back from the
// reason's text, whose shapes are fixed by the processor: "event[N].field:
// rule" and "field: rule" give field, "event[N]: rule" gives record, a room
// of another environment room_env, a member refused by the room's cap
// room_members, and a board's rejection late or ts.
func Class(reason string) string {
	switch {
	case reason == "":
		return "unknown"
	case strings.HasPrefix(reason, "board "):
		if strings.Contains(reason, ": late") {
			return "late"
		}
		return "ts"
	case strings.Contains(reason, "does not belong to environment"):
		return "room_env"
	case strings.Contains(reason, "has reached its members cap"):
		return "room_members"
	}
	head, _, ok := strings.Cut(reason, ": ")
	if !ok {
		return "other"
	}
	if head == "event" {
		return "record"
	}
	if rest, ok := strings.CutPrefix(head, "event["); ok {
		_, field, ok := strings.Cut(rest, "].")
		if !ok {
			return "record"
		}
		return field
	}
	return head
}
