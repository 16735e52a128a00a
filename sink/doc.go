// Package sink keeps rostrum's meeting ranking state in Redis.
//
// Per room it keeps three keys that share the room's hash tag (see
// RoomKeys): the member states, the ranking sorted set with codec scores,
// and the stable hash (the stable list with its seq and last output, the
// watermarks, the rules version and the state token). Apply plans every
// touched room of a poll batch in Go and writes them all in one round trip
// of fastLua (pipelined, in overlapping segments: see below), a script per
// room (or per few rooms) that
//
//   - refuses the room, writing nothing, when a part is at or below the
//     room's watermark for that partition (exactly-once effect: a replay or
//     a zombie consumer that lost its partition changes nothing), or when
//     the room's state token is no longer the one the plan was made from,
//     and otherwise raises the watermarks,
//   - stores the changed members' states, ZADDs the ranked ones with their
//     codec score and ZREMs the rest,
//   - refreshes the idle-room TTL when due,
//   - returns the stored stable list, its seq and any output not yet
//     acknowledged as published.
//
// StoreStable then stores new stable lists with a compare-and-set on seq and
// on the ranking version (bumped by every apply that changes the ranking), so
// two processors applying the same room at once (no co-partitioning is
// assumed) never both claim a seq, and a list merged from a raw top-N that
// has changed since is never stored. The output is kept as pending until the
// processor acknowledges its publication, so a crash between storing and
// publishing republishes it instead of losing it.
//
// # Planning in Go, and the state cache
//
// A room's plan (roomModel.plan, room.go) merges the update's member
// registers with ranking.MemberState.Merge, the one production merge,
// applies the members cap, scores the members and ranks the top; the
// scripts never read a member state. The plan starts from the room's member
// states: the sink keeps an in-process copy of the rooms it writes
// (stateCache, bounded by Config.CacheMembers), and a room it does not hold
// is read first (loadLua: states, stable hash and the update's watermarks)
// and planned in the next round trip. Parts at or below their watermarks
// are left out of a plan made from such a read (see loadedRoom.unapplied).
// A room larger than the bound (and than goTopMax) is read in part: the
// members its update names and its stable list's, and its count of
// members (roomModel.partial); such a plan ranks no top (fastLua reads it
// from the ranking), and its entry goes at the apply's end.
//
// Every write of a room's member states also writes a new state token in
// the room's stable hash, and fastLua writes only while the token is still
// the one the plan was made from; otherwise it changes nothing and the room
// is read and planned again. So the copy is an optimisation that a
// conditional write guards (docs/DESIGN.md §3.7): another processor's
// write, an expiry, a restart of Redis or a rebuild only cost two more
// round trips for the rooms concerned. On a single node one call carries
// up to Config.RoomsPerScript rooms, each applied as by a call of its own.
//
// The tokens also tell when Redis went back in time with its generation
// marker intact (a restored snapshot, a failover that lost writes): a room
// holding an older token of this sink than the one it wrote last makes Apply
// return ErrRedisRolledBack, and the processor rebuilds.
//
// ApplyMerge goes one step further for rooms whose stable hash the plan
// knows: it calls the processor's stable step with the state the apply will
// leave and stores the new list in the same script, under the compare-and-set
// of StoreStable. Such a room costs one script and one round trip per batch.
//
// A room scored under other rules than the Store's (a rolling change of
// --ranking) is re-scored whole by its next write: the plan holds every
// member and fastLua makes the ranking again (rankingRebuilt).
//
// # Segments
//
// A round trip of many rooms is sent in segments (apply.go, roundTrip): about
// a sixteenth of its rooms each, at least 64, every segment a pipeline of its
// own that ends with the generation marker's read. A segment is sent as soon
// as it is planned, up to two in flight on two connections, so that Go plans
// the next segment, and writes and reads the pipelines, while Redis runs the
// ones before: the processor's work and Redis's overlap instead of adding
// up. A trip of 64 rooms or fewer is one segment. Segments in flight
// together hold different rooms: when an apply holds a room twice, the
// later update waits, neither planned nor read, until the earlier one is
// applied, so a room's updates are written in order.
//
// # TTLs
//
// fastLua refreshes the TTL of a room's three keys when the last refresh
// the sink saw is older than an eighth of Config.RoomTTL (and at once for a
// ranking it creates again, and on a room's first write after a read), so
// an idle room expires between 7/8 of the TTL and the TTL after its last
// write.
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
// into a table A under the same names, which its header lists. fastLua
// takes a head that is the same for every call of a Store (the TTL, top-N
// and rules version), then a record per room. The constants both languages
// spell (merge modes, TTL refreshes, replies, the stable hash's fields) are
// declared in luaconsts.go alone; go generate writes them into
// lua/consts.lua (MERGE_STORE for mergeStore), and a test fails when that
// file is not current.
//
// The package imports codec, internal/redisscript, go-redis and zap; it
// knows nothing of Kafka.
package sink
