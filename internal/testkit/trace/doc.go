// Package trace generates seeded, realistic meeting traces for rostrum's
// end-to-end and chaos tests: the records producers would put on the three
// callback topics ({env}.callbacks.rtc, .client and .signal) of a few dozen
// live meetings, good and bad ones mixed.
//
// Generate is a pure function of its Config: the same Seed gives the same
// records, byte for byte (math/rand/v2's PCG, no clock, no map iteration).
//
// # What a trace holds
//
// A small simulation keeps each room's members (present or not, audio,
// video, role, the current host) and draws one action per record:
//
//	topic   event types            how it looks
//	rtc     volume, audio, video,  volume indications dominate, mostly as
//	        screen_share           JSON arrays of several speakers of one room;
//	                               a presenter (often a host or guest) starts
//	                               or stops sharing
//	client  audio, video, join,    one member's media state; joins and leaves;
//	        leave, screen_share,   the host's client puts a member in the
//	        spotlight              spotlight or takes it out
//	signal  role, join, leave      host hand-over (new host, former host to
//	                               cohost or student), excluded roles
//	                               (broadcast_control, screen_picker,
//	                               assistant) given and taken back, bulk joins
//
// The event clock starts at BaseTS and advances 1–4 ms per record. On top of
// the fresh, in-order records, shares of the records are (drawn per record):
//
//   - BadRate: broken records the decoder must reject whole (Record.Bad says
//     how): not JSON, truncated, missing or invalid fields, volume 1000,
//     unknown type or role, empty array, bad id charset, ts missing or a
//     string, a good and a bad event in one array, and more.
//   - DupRate: verbatim re-sends of one of the last 256 good records
//     (Record.Dup), on the same topic, or on another topic when every event
//     of the record names its source explicitly, so that the decoded events
//     are identical.
//   - ReorderRate: fresh records whose events are up to 5 s older than the
//     newest event before them (Record.Reordered), as when one topic lags
//     the others.
//   - UnknownRate: well-formed callbacks of types rostrum does not rank on
//     (hand_raise, chat_message, …; Record.Unknown, events of
//     codec.TypeIgnored), with any value: skipped and counted by default,
//     sent to the DLQ with --unknown-types dlq.
//
// A few fresh records also contradict a recent event at the same millisecond
// (audio on against audio off, a leave against a join), to exercise the
// tie-breaks of last-writer-wins.
//
// Good records follow docs/DESIGN.md §2 exactly: one compact JSON object
//
//	{"room_id":"r-3","user_id":"u-42","type":"volume","value":512,"ts":1763700000123}
//
// or a JSON array of them, all of the record key's room; role values are role
// names; join and leave have no value; about one record in ten names its
// source. Record.Events is what rostrum's decoder returns for the value.
package trace
