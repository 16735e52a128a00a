// Package sink keeps rostrum's meeting ranking state in Redis.
//
// Per room it keeps four keys that share the room's hash tag (see RoomKeys):
// the member states, the ranking sorted set with codec scores, the stable
// list with its seq and last output, and the watermarks. Apply sends every
// touched room of a poll batch in one pipelined round trip; each room is one
// Lua script that
//
//   - skips each topic-partition part at or below the room's watermark for
//     that partition (exactly-once effect: a replay or a zombie consumer that
//     lost its partition changes nothing) and raises the watermark,
//   - merges the members' last-writer-wins registers (MemberState),
//   - ZADDs ranked members with their codec score and ZREMs the rest,
//   - refreshes the idle-room TTL,
//   - returns the raw top-N, the stored stable list, its seq and any output
//     not yet acknowledged as published.
//
// StoreStable then stores new stable lists with a compare-and-set on seq and
// on the ranking version (bumped by every apply that changes the ranking), so
// two processors applying the same room at once (no co-partitioning is
// assumed) never both claim a seq, and a list merged from a raw top-N that
// has changed since is never stored. The output is kept as pending until the
// processor acknowledges its publication, so a crash between storing and
// publishing republishes it instead of losing it.
//
// The package imports codec, go-redis and zap; it knows nothing of Kafka.
package sink
