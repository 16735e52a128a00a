// Package sink keeps rostrum's meeting ranking state in Redis.
//
// Per room it keeps three keys that share the room's hash tag (see
// RoomKeys): the member states, the ranking sorted set with codec scores,
// and the stable hash (the stable list with its seq and last output, and
// the watermarks). Apply sends every touched room of a poll batch in one
// pipelined round trip; each room is one Lua script that
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
// # The state cache
//
// A sink keeps an in-process copy of the member states of the rooms it
// writes (Config.CacheMembers bounds it). For a room it holds, Apply merges
// the updates into the copy, computes the scores and the raw top-N in Go,
// and sends a small script (fastLua) that only stores the results; on a
// single node one call carries up to Config.RoomsPerScript such rooms,
// each applied as by a call of its own. Every
// script that changes a room's member states writes a new state token in
// the room's stable hash, and fastLua writes only while the token is still
// the one the copy was taken at; otherwise it changes nothing and the room
// is applied again by applyLua, whose reply refills the copy. So the copy is
// an optimisation that a conditional write guards (docs/DESIGN.md §3.7): another
// processor's write, an expiry, a restart of Redis or a rebuild only cost a
// second round trip for the rooms concerned.
//
// The tokens also tell when Redis went back in time with its generation
// marker intact (a restored snapshot, a failover that lost writes): a room
// holding an older token of this sink than the one it wrote last makes Apply
// return ErrRedisRolledBack, and the processor rebuilds.
//
// ApplyMerge goes one step further for rooms whose stable hash the copy also
// knows: it calls the processor's stable step with the state the apply will
// leave and stores the new list in the same script, under the compare-and-set
// of StoreStable. Such a room costs one script and one round trip per batch.
//
// # TTLs
//
// applyLua refreshes the TTL of a room's three keys on every write; fastLua
// does so only when the last refresh the sink saw is older than an eighth of
// Config.RoomTTL (and at once for a ranking it creates again), so an idle
// room expires between 7/8 of the TTL and the TTL after its last write.
//
// # Scripts
//
// Each Lua script is a file in lua/, embedded and listed in scripts.go; its
// header states its KEYS, ARGV and reply. Every call goes through
// internal/redisscript, which loads the scripts when Redis lost them and
// runs again only the calls that failed with NOSCRIPT.
//
// A script's ARGV is written by Go structs (scriptargs.go), whose fields
// are its arguments in order, and read by the script once, at its top,
// into a table A under the same names, which its header lists. The room
// scripts take a head that is the same for every call of a Store (the TTL,
// top-N, rules version and, for applyLua, the score's layout and the
// members cap), then the room's own arguments; fastLua's call carries one
// head and a record per room. The constants both languages spell (merge
// modes, TTL refreshes, replies, the stable hash's fields, the packed state's
// format) are declared in luaconsts.go alone; go generate writes them into
// lua/consts.lua (MERGE_STORE for mergeStore), and a test fails when that
// file is not current.
//
// The package imports codec, internal/redisscript, go-redis and zap; it
// knows nothing of Kafka.
package sink
