// Package traceparent reads and writes the W3C Trace Context traceparent
// header (https://www.w3.org/TR/trace-context/#traceparent-header) that
// rostrum's callback, output and DLQ records carry (docs/DESIGN.md §2,
// docs/tracing.md), and makes the ids of a hop when no OpenTelemetry SDK
// records spans. Parse allocates nothing; Append writes 55 bytes.
//
// The value, version 00:
//
//	00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
//	│  │                                │                └ trace flags, 2 hex (01 sampled, 02 random)
//	│  │                                └ parent (span) id, 16 lowercase hex, not all zero
//	│  └ trace id, 32 lowercase hex, not all zero
//	└ version, 2 lowercase hex, never ff
//
// A later version may append "-" and more fields: Parse reads the first 55
// bytes of it, as the specification asks; Append always writes version 00.
package traceparent

import (
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"

	"github.com/rostrumhq/rostrum/codec"
)

// Header is the record and HTTP header that carries the value.
const Header = codec.HeaderTraceparent

// Len is the length of a version 00 value.
const Len = 55

// Parse returns the span context of value b, marked remote, or false when b
// is not a valid traceparent (wrong length or version, upper-case or non-hex
// digits, an all-zero trace or span id). It reads bytes from outside and
// never panics.
func Parse(b []byte) (trace.SpanContext, bool) {
	if len(b) < Len || b[2] != '-' || b[35] != '-' || b[52] != '-' {
		return trace.SpanContext{}, false
	}
	ver, ok := hexByte(b[0], b[1])
	switch {
	case !ok || ver == 0xff:
		return trace.SpanContext{}, false
	case ver == 0 && len(b) != Len:
		return trace.SpanContext{}, false
	case len(b) > Len && b[Len] != '-':
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	if !decodeHex(tid[:], b[3:35]) || !decodeHex(sid[:], b[36:52]) || !tid.IsValid() || !sid.IsValid() {
		return trace.SpanContext{}, false
	}
	flags, ok := hexByte(b[53], b[54])
	if !ok || ver == 0 && flags > 3 {
		return trace.SpanContext{}, false // version 00 defines two flags only
	}
	flags &= byte(trace.FlagsSampled | trace.FlagsRandom)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags), Remote: true}), true
}

// Append appends the version 00 value of sc to dst. sc must be valid.
func Append(dst []byte, sc trace.SpanContext) []byte {
	const digits = "0123456789abcdef"
	dst = append(dst, '0', '0', '-')
	tid, sid := sc.TraceID(), sc.SpanID()
	for _, c := range tid {
		dst = append(dst, digits[c>>4], digits[c&0xf])
	}
	dst = append(dst, '-')
	for _, c := range sid {
		dst = append(dst, digits[c>>4], digits[c&0xf])
	}
	f := byte(sc.TraceFlags())
	return append(dst, '-', digits[f>>4], digits[f&0xf])
}

// Format returns the version 00 value of sc in a slice of its own.
func Format(sc trace.SpanContext) []byte { return Append(make([]byte, 0, Len), sc) }

// Child returns the span context of a hop that continues parent: the same
// trace id and flags, a new span id. It is how rostrum continues a trace
// when no SDK records spans.
func Child(parent trace.SpanContext) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.TraceID(), SpanID: NewSpanID(), TraceFlags: parent.TraceFlags()})
}

// New returns the span context of a hop that starts a trace: a new trace id
// and span id, flagged sampled so that the hops after it, which may record
// spans, are not told to drop them.
func New() trace.SpanContext {
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.LittleEndian.PutUint64(tid[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: NewSpanID(), TraceFlags: trace.FlagsSampled})
}

// NewSpanID returns a random span id that is not all zero. It draws from
// math/rand/v2's global generator (ChaCha8, seeded by the runtime from the
// system's entropy, one state per thread): cheap, lock-free and
// unpredictable enough for ids, which are not secrets.
func NewSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.LittleEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// decodeHex decodes lowercase hex src into dst (len(src) == 2*len(dst)).
func decodeHex(dst, src []byte) bool {
	for i := range dst {
		b, ok := hexByte(src[2*i], src[2*i+1])
		if !ok {
			return false
		}
		dst[i] = b
	}
	return true
}

func hexByte(hi, lo byte) (byte, bool) {
	h, ok1 := nibble(hi)
	l, ok2 := nibble(lo)
	return h<<4 | l, ok1 && ok2
}

// nibble decodes one lowercase hex digit: the specification allows no
// upper case.
func nibble(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
