// Package codec turns outside bytes into rostrum's events and member state
// into exact Redis scores. Both halves are pure functions: no I/O, no clock,
// no shared mutable state; codec imports only the standard library.
//
// # Event decoding
//
// A Kafka record value on a callback topic holds one callback event (a JSON
// object) or a JSON array of them. Decoder.Decode turns it into []Event and
// checks every rule of docs/DESIGN.md §2: room and user ids of 1–128 bytes of
// [A-Za-z0-9._:@-], a known Type with the value that type takes (audio and
// video 0/1, volume 0–999, a Role name for role, none for join and leave), an
// event time in Unix milliseconds no more than DecodeConfig.MaxFutureSkew
// after the clock reading the caller passes in, and an optional Source that
// otherwise comes from the topic. A record is accepted whole or rejected
// whole: a rejected record yields a *DecodeError whose message is the
// one-line reason the processor puts in the rostrum-error header of the
// dead-letter record ("event[3].ts: required"). Outside bytes never make
// the decoder panic; a fuzz test holds it to that.
//
// # Record headers
//
// records.go names the headers of the records rostrum produces and their
// record kinds (content-type application/json and rostrum-schema
// "<kind>/<major>", e.g. ranking.topn/1; the DLQ envelope; the redrive
// headers), so that processor, control and dlq write and read them by one
// name without importing one another (docs/topics/README.md).
//
// # Score encoding
//
// A Redis sorted-set score is an IEEE-754 double. Integers are exact in a
// double only up to 2^53; above that, neighbouring integers share one double
// and Redis silently stores them as equal scores. The layouts of the systems
// rostrum replaces overflow that limit. Seed 003's 19-digit decimal score
// [audio 1][volume 3][video 1][role 1][ms timestamp 13] reaches 2.1e18,
// where doubles are 256 apart: two members whose newest events are 1 ms (and
// often up to a quarter of a second) apart get the same score. Seed 001's
// 23 bits of points above 40 bits of time in a 64-bit long reaches 2^62 for
// large totals, where doubles are 1024 apart: who reached a total first is
// lost within about a second. score_redis_test.go shows both collapsing in a
// real Redis, and rostrum's scores for the same members staying apart.
//
// A Layout therefore packs unsigned fields, most significant first, into at
// most MaxBits = 53 bits and stores the resulting integer as a float64. Each
// field has a width and a Direction; a LowerFirst field is stored inverted
// (Max - v) so that a larger score always ranks higher (ZREVRANGE). The order
// of scores equals the lexicographic order of the field tuples, and every
// score round-trips through Redis bit for bit. A layout that needs more than
// 53 bits is refused by NewLayout, at start-up; a value that does not fit its
// field is a *RangeError, never a wrap-around. Encode does not allocate, nor
// does Decode when given room for the values.
//
// The meeting score (Meeting, docs/DESIGN.md §4, §10) packs the fields of the
// ranking rules (Rules, ParseRules), most significant first, then the
// member's newest event time. Under DefaultRules, bits numbered from the
// least significant (each field's shift is its lowest bit):
//
//	 52  51  50  49          40  39  38    36  35                            0
//	+---+---+---+--------------+---+---------+-------------------------------+
//	| p | s | a |    volume    | v |  role   | time: 4 ms units since epoch  |
//	+---+---+---+--------------+---+---------+-------------------------------+
//	  1   1   1        10        1      3                  36       = 53 bits
//
//	field         bits  values
//	spotlight     1     0 off, 1 in the spotlight
//	screen_share  1     0 off, 1 sharing
//	audio         1     0 off, 1 on
//	volume        10    0..999 (1000..1023 are refused)
//	video         1     0 off, 1 on
//	role          3     1 student, 2 guest, 3 cohost, 4 host
//	time          36    (event time - epoch) / 4 ms; newer ranks higher
//
// Other rules place their fields in their order and give the time the bits
// left, at most 38, in a unit of 1, 2 or 4 ms: every rule set covers 2^38 ms,
// about 8.7 years after the epoch (DefaultEpoch, 2025-01-01 UTC, covers event
// times until 2033-09-17). LegacyRules (audio, volume, video, role; 1 ms) give
// exactly the scores rostrum computed before ranking rules. An event time
// outside the window is an error, never a wrap-around. Changing the rules or
// the epoch changes the scores; Meeting.Version names them, rooms store it,
// and a room scored under another version (or stored without one) is
// re-scored from its registers when touched. Roles that never rank
// (broadcast_control, screen_picker, assistant) have no score: a member
// holding one is removed from the ranking instead.
//
// The first-reached score (NewFirstReached, seed 001) puts a board's total
// above the time the member reached it, inverted, so that among equal totals
// the earlier one ranks higher.
package codec
