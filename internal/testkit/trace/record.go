package trace

import (
	"encoding/json"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

// Record is one Kafka record of a trace.
type Record struct {
	// Topic is the callback topic's suffix: "rtc", "client" or "signal"; the
	// topic is "{env}.callbacks." + Topic.
	Topic string
	// Key is the room id the record is about.
	Key string
	// Value is the record value, as a producer sent it.
	Value []byte
	// Events are the events Value decodes to, in order, when the record is
	// good: Source is the topic's unless the JSON names one. Nil when Bad.
	Events []codec.Event
	// Bad says, in a few words, what is wrong with a record the decoder must
	// reject ("volume out of range", "not json"); empty for a good record.
	Bad string
	// Dup marks a verbatim re-send of an earlier good record, maybe on
	// another topic.
	Dup bool
	// Reordered marks a fresh record whose events are older than events of
	// records before it: the trace clock had moved on.
	Reordered bool
	// Unknown marks a record whose events are of a type rostrum does not
	// rank on (codec.TypeIgnored, TypeName set): good when skipped (the
	// default), sent to the DLQ with --unknown-types dlq.
	Unknown bool
}

// Good reports whether the decoder must accept r.
func (r Record) Good() bool { return r.Bad == "" }

// topics are the callback topic suffixes; each is also its source's name.
var topics = [...]string{"rtc", "client", "signal"}

// topicSource returns the source of events on topic.
func topicSource(topic string) codec.Source {
	s, ok := codec.ParseSource(topic)
	if !ok {
		panic("trace: unknown topic " + topic)
	}
	return s
}

// field is one member of a JSON object: its name and its value's JSON text.
// Bad records are built by editing a good event's fields.
type field struct {
	key, raw string
}

// eventFields returns the JSON fields of e in docs/DESIGN.md §2's order; withSource
// adds e's source.
func eventFields(e codec.Event, withSource bool) []field {
	fs := []field{
		{"room_id", quote(e.RoomID)},
		{"user_id", quote(e.UserID)},
		{"type", quote(e.Type.String())},
	}
	switch e.Type {
	case codec.TypeIgnored:
		fs[2].raw = quote(e.TypeName)
		// Whatever the meeting system sends with it; rostrum never reads it.
		switch e.TS % 3 {
		case 1:
			fs = append(fs, field{"value", `{"level":3,"text":"hi, all"}`})
		case 2:
			fs = append(fs, field{"value", `"on"`})
		}
	case codec.TypeJoin, codec.TypeLeave:
	case codec.TypeRole:
		fs = append(fs, field{"value", quote(codec.Role(e.Value).String())})
	default:
		fs = append(fs, field{"value", strconv.FormatInt(e.Value, 10)})
	}
	fs = append(fs, field{"ts", strconv.FormatInt(e.TS, 10)})
	if withSource {
		fs = append(fs, field{"source", quote(e.Source.String())})
	}
	return fs
}

// object returns the JSON object of fs.
func object(fs []field) []byte {
	b := []byte{'{'}
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, quote(f.key)...)
		b = append(b, ':')
		b = append(b, f.raw...)
	}
	return append(b, '}')
}

// array returns the JSON array of objs.
func array(objs [][]byte) []byte {
	b := []byte{'['}
	for i, o := range objs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, o...)
	}
	return append(b, ']')
}

// encode returns the record value holding events: one object, or an array
// when asArray.
func encode(events []codec.Event, asArray, withSource bool) []byte {
	if !asArray {
		return object(eventFields(events[0], withSource))
	}
	objs := make([][]byte, len(events))
	for i, e := range events {
		objs[i] = object(eventFields(e, withSource))
	}
	return array(objs)
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string always marshals
	}
	return string(b)
}
