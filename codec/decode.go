package codec

import (
	"fmt"
	"strconv"
	"time"
)

// Defaults of DecodeConfig.
const (
	DefaultMaxRecordBytes = 1 << 20
	DefaultMaxEvents      = 10000
	DefaultMaxFutureSkew  = 5 * time.Minute
)

// Fixed limits of the decoder. They are not configurable because no valid
// callback event comes near them; they bound the work a hostile record can
// cause.
const (
	// maxDepth is the deepest nesting of arrays and objects in a record,
	// counting the record's own array and objects (so an ignored field of a
	// single-object record may nest 31 levels, one of an array record 30).
	maxDepth = 32
	// maxFields is the most members one event object may have, known and
	// unknown ones together. It bounds the duplicate check of unknown field
	// names, which compares each name's hash with the ones before it.
	maxFields = 64
	// inlineUnknown is how many unknown field names of an event are tracked
	// without allocating.
	inlineUnknown = 8
	// maxIDBytes is the longest room or user id.
	maxIDBytes = 128
	// maxRecordLimit caps MaxRecordBytes: offsets into a record are kept in
	// 32 bits.
	maxRecordLimit = 1 << 30
)

// DecodeConfig limits what Decode accepts. Zero fields take the defaults.
type DecodeConfig struct {
	// MaxRecordBytes is the largest record value accepted; a larger one is
	// rejected before it is parsed. Default: 1 MiB. At most 1 GiB.
	MaxRecordBytes int
	// MaxEvents is the most events in one JSON-array record. Default: 10000.
	MaxEvents int
	// MaxFutureSkew is how far an event's ts may be after the clock passed
	// to Decode, which allows for producers whose clocks run ahead.
	// Default: 5m. Applied at millisecond precision.
	MaxFutureSkew time.Duration
	// IgnoreUnknownTypes makes an event whose type is not a known one, but
	// a name of 1..64 bytes of [A-Za-z0-9._:@-], decode as TypeIgnored (its
	// value is not checked; every other field is) instead of rejecting the
	// record. The callback topics carry every callback of the meeting
	// system, most of which rostrum does not rank on. Default false.
	IgnoreUnknownTypes bool
}

// WithDefaults returns c with every zero or negative field set to its
// default, and MaxRecordBytes capped at 1 GiB.
func (c DecodeConfig) WithDefaults() DecodeConfig {
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	c.MaxRecordBytes = min(c.MaxRecordBytes, maxRecordLimit)
	if c.MaxEvents <= 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	if c.MaxFutureSkew <= 0 {
		c.MaxFutureSkew = DefaultMaxFutureSkew
	}
	return c
}

// Validate reports a field that is negative or beyond its cap, so that a
// bad setting is refused at start-up instead of being replaced by a default.
func (c DecodeConfig) Validate() error {
	switch {
	case c.MaxRecordBytes < 0 || c.MaxRecordBytes > maxRecordLimit:
		return fmt.Errorf("codec: max record bytes must be between 0 (default) and %d, got %d", maxRecordLimit, c.MaxRecordBytes)
	case c.MaxEvents < 0:
		return fmt.Errorf("codec: max events must be >= 0 (0: default), got %d", c.MaxEvents)
	case c.MaxFutureSkew < 0:
		return fmt.Errorf("codec: max future skew must be >= 0 (0: default), got %v", c.MaxFutureSkew)
	}
	return nil
}

// Decoder decodes callback record values (docs/DESIGN.md §2) into Events.
//
// A record value is one JSON object or a non-empty JSON array of objects,
// UTF-8, at most MaxRecordBytes long. Each object must hold:
//
//	room_id, user_id  string, 1..128 bytes of [A-Za-z0-9._:@-]
//	type              meeting: "join", "leave", "audio", "video", "volume",
//	                  "role", "screen_share", "spotlight"; boards: "gift",
//	                  "score", "received", "read",
//	                  "passed", "trade"
//	value             audio, video, screen_share, spotlight: integer 0 or 1;
//	                  volume: integer 0..999;
//	                  role: a role name; gift, score, trade: integer
//	                  1..2^53-1; join, leave, received, read, passed: absent
//	id                optional: the producer's event id, 1..128 bytes of
//	                  [A-Za-z0-9._:@-]
//	ts                integer Unix milliseconds, > 0, at most MaxFutureSkew
//	                  after the clock passed to Decode
//	source            optional: "rtc", "client" or "signal"
//
// Decisions beyond docs/DESIGN.md §2, made so that a record means one thing only:
//
//   - Integers are plain JSON integer literals: 1.0, 1e3, "1" and true are
//     rejected, whatever their value.
//   - A field set to null is treated as absent.
//   - Unknown fields are ignored, so that producers can add fields before
//     rostrum reads them. They must still be valid JSON, nested at most 32
//     levels deep in the whole record, and an event has at most 64 fields.
//   - A field name may appear once per event; a duplicate, known or not, is
//     rejected (two readers could otherwise see two different events).
//     Names are compared after JSON unescaping and are case-sensitive.
//   - Strings must be valid UTF-8. Escapes are decoded as encoding/json
//     does: a lone surrogate \uD800 becomes U+FFFD.
//   - Nothing but JSON whitespace may follow the record's value.
//
// A Decoder is immutable and safe for concurrent use. The zero Decoder
// applies the default limits.
type Decoder struct {
	cfg DecodeConfig
}

// NewDecoder returns a Decoder with cfg's limits; zero fields take the
// defaults (see DecodeConfig.WithDefaults).
func NewDecoder(cfg DecodeConfig) *Decoder {
	return &Decoder{cfg: cfg.WithDefaults()}
}

// Config returns the limits d applies, defaults filled in.
func (d *Decoder) Config() DecodeConfig { return d.cfg.WithDefaults() }

// Decode appends the events of one record value to dst and returns the
// extended slice. source is the topic's source, used for events without a
// source field. now is the wall clock for the future-skew check of ts.
//
// A record is accepted whole or rejected whole: on error Decode returns dst
// with its length as given and a *DecodeError; slots of dst's spare capacity
// it wrote are zeroed again. Decode allocates the two id strings of each
// event and dst's growth, nothing else, unless it rejects the record (the
// error), meets an event with more than 8 unknown fields (once per record)
// or escaped unknown field names longer than 64 bytes.
func (d *Decoder) Decode(dst []Event, value []byte, source Source, now time.Time) ([]Event, error) {
	cfg := d.cfg.WithDefaults() // a no-op but for the zero Decoder
	if len(value) > cfg.MaxRecordBytes {
		return dst, &DecodeError{Index: -1, Field: "record",
			Rule: fmt.Sprintf("%d bytes exceeds limit %d", len(value), cfg.MaxRecordBytes)}
	}
	n0 := len(dst)
	s := jsonScanner{
		buf:       value,
		idx:       -1,
		maxTS:     now.UnixMilli() + cfg.MaxFutureSkew.Milliseconds(),
		source:    source,
		maxEvents: cfg.MaxEvents,

		ignoreUnknown: cfg.IgnoreUnknownTypes,
	}
	out, err := s.record(dst)
	if err != nil {
		// Drop the references to the id strings of the rejected record.
		clear(out[n0:])
		if len(out) > n0 && cap(dst) > n0 {
			clear(dst[n0:min(len(out), cap(dst))])
		}
		return dst[:n0], err
	}
	return out, nil
}

// DecodeError says why a record was rejected. Its Error is a one-line reason
// meant for the DLQ's rostrum-error header, naming the field and the rule:
//
//	event[3].ts: required
//	room_id: invalid character '\x00' at byte 5 (allowed [A-Za-z0-9._:@-])
//	value: volume must be 0..999, got 1000
//	record: 2097152 bytes exceeds limit 1048576
//	json: unexpected end of input at byte 17
type DecodeError struct {
	// Index is the event's index in an array record; -1 for a single-object
	// record and for errors of the whole record (Field "record" or "json").
	Index int
	// Field is the JSON field that broke a rule ("room_id", "ts", ...),
	// "record" for a rule of the whole record, "json" for a syntax error, or
	// "" for a rule of the event object as a whole.
	Field string
	// Rule is the rule broken, in a few words.
	Rule string
}

// Error returns the reason on one line: "event[i].field: rule" for an event
// of an array record, "field: rule" otherwise.
func (e *DecodeError) Error() string {
	switch {
	case e.Index >= 0 && e.Field != "":
		return "event[" + strconv.Itoa(e.Index) + "]." + e.Field + ": " + e.Rule
	case e.Index >= 0:
		return "event[" + strconv.Itoa(e.Index) + "]: " + e.Rule
	case e.Field != "":
		return e.Field + ": " + e.Rule
	}
	return "event: " + e.Rule
}
