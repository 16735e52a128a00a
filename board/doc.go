// Package board keeps rostrum's leaderboards in Redis (docs/DESIGN.md §8):
// each board's state, exactly once under redelivery, its expiry and
// settlement, and the reads. What a board is (its configuration, compiled;
// its periods, slices, score layout, decay and units) is package
// board/boarddef's, which knows nothing of Redis; this package builds the
// keys, the Lua scripts and their arguments from it.
//
// # Kinds
//
// A periodic board ranks members per calendar period (hour, day, week with a
// configurable first day, month) of an IANA zone, DST included; the period
// comes from the event time, never the clock, so a replay lands where the
// original did. Past periods stay readable for Retention periods: their keys
// carry an EXPIREAT.
//
// A rolling board ranks the last N slices; a windows board keeps several
// such windows, each over slices of its own length (a multiple q of the
// board's slice; by default the board's): windows of one length share a
// slice set (keys.go). Slices are aligned to UTC (a slice divides a
// day, so one starts at every 00:00 UTC); slice s of length g holds the
// event times [s·g, (s+1)·g) in Unix milliseconds. An event is added on
// arrival to its slice in every slice set a window still takes it from,
// and to every window that still holds its slice ("real time, a
// constant number of writes per event"). A rolling board keeps a hash per
// slice; a windows board packs each member's slices into its state, one
// hash entry per member, and keeps an expiry index listing the members at
// the time their first slice leaves a window, which is all Expire reads
// (lua/packed.lua). Store.Expire subtracts a slice
// from a window once it has left it: when now ≥ (s + slices(window))·g +
// grace. The last subtracted slice of each window is
// recorded by the same script that subtracts, so expiry is atomic and
// exactly once whoever calls it, however often, and it works while no event
// arrives.
//
// # Time: late events and grace
//
// Late is decided twice. Batch.Add compares the record's Kafka timestamp
// with the event's period (end + grace) or slice (the time the last
// window to hold it drops it + grace): deterministic on replay. The Redis script checks
// again atomically: an event for a slice at or below a window's last
// subtracted slice is not added to that window, and when no window takes it
// the event is late (Result.Late, and a per-board counter in Redis). Late
// events go to the DLQ with reason class "late"; the rest of their record
// counts normally.
//
// Grace delays the subtraction of a slice as much as it delays lateness, so
// a window may hold up to one slice more than its length for the grace
// period after a slice boundary.
//
// # Operators and first-reached ties
//
//	op    total                                   reached_at
//	incr  sum of values (or of 1s, value: one)    time of the newest counted event
//	best  largest value                           earliest time that value was seen
//	set   value of the newest event (equal        time of that event
//	      times: the larger value)
//
// best and set are order independent, so replays and redeliveries in any
// order agree; they need periodic boards (a window cannot subtract them).
//
// With tie: first-reached the sorted-set score is
//
//	score = min(total, max-total)·2^rb + (2^rb − 1 − reachedRel)
//	reachedRel = floor((reached_at − origin) / tie-resolution)
//
// where rb = 53 − bits(max-total), so every score is an integer below 2^53,
// exact in a double (codec.NewFirstReached is the layout). A periodic
// first-reached board at 1 ms (boarddef.Board.ScoreHoldsState) reads a
// member's total and reached time back from its score, so its member hash
// keeps only the members the score cannot give back (a total beyond
// max-total, a sum below the floor). The origin is the
// period's start for periodic boards (rb covers the longest period of the
// unit, DST included) and the board's epoch for rolling and windows boards
// (which work until epoch + 2^rb·tie-resolution; boarddef.Compile refuses
// a board whose horizon ends within a year). Totals are kept exactly in a hash next
// to the sorted set; a total above max-total ranks as max-total (it is
// counted as saturated). With tie: none the score is the total itself and
// equal totals follow Redis's order: reverse lexicographic by member in a
// descending read. Ranks are 1-based and unique.
//
// # Exactly once
//
// Every board records, per topic-partition, the ranges of offsets it has
// applied. Board operations are not idempotent, so a part (one
// topic-partition's events of a batch, folded) is sent with the range of
// offsets the batch read from that partition (Batch.Cover: every record,
// with board events or not, so that consecutive batches leave one range):
// the script skips a part whose range lies inside the applied ranges,
// applies one that meets none of them, and refuses one that overlaps them
// in part, answering with the ranges; Apply then re-sends that part
// unfolded, each event with its offset, and the script applies each event
// whose offset it does not find applied (a second round trip, only after a
// partial redelivery or when a replay meets a range another one applied).
// Whatever is applied, its range is merged into the ranges in the same
// step. Ranges, unlike a single watermark, let ranges of one partition
// arrive in any order: after Redis lost its data, the write-ahead logs of
// the processors a partition moved between replay its older and newer
// records in whatever order they run, and each counts once.
//
// The ranges are stored in a watermark hash, the board's (a periodic
// board: each period's, below):
//
//	field               value
//	"topic/partition"   "lo-hi,lo-hi,…"  sorted, disjoint, non-adjacent; offsets inclusive
//	"gen"               generation adopted (Adopt)
//
// In normal operation a partition has one range. Gaps come from ranges still
// to be replayed and from offsets that hold no record between two batches
// (transaction markers, compacted records). At most 64 ranges are kept per
// partition: one more closes the narrowest gap (the lowest of equal ones),
// marking its offsets applied, which is what a watermark did; a record in a
// closed gap is then never applied (never twice either). Closed gaps are
// counted (Result.GapsClosed and "gaps_closed" in the counters hash).
//
// Events with an id are never folded: each is counted only if SADD into
// its period's or slice's id set returns 1, so a producer's retry counts
// once while its period or slice is kept.
//
// # Redis keys
//
// Every key carries one hash tag, so each script runs on one Redis Cluster
// slot; one script call per board (per period of a periodic board) per
// batch, pipelined together. Rolling, windows and total boards keep one
// tag per board: all windows of a board share its slices and are updated
// by one atomic script, so a board's window set is the board. A periodic
// board keeps one tag per period, so that its periods spread over a
// cluster's masters. Boards of every kind:
//
//	rostrum:{env}:board:{name}:w              hash  "topic/partition" → applied ranges; "gen" → generation
//	                                                (periodic: "gen" only, the ranges are the periods')
//	rostrum:{env}:board:{name}:n              hash  counters: late, saturated, gaps_closed (periodic: the periods')
//	periodic, per period (label), under the period's own tag (keys.go):
//	rostrum:{env}:board:{name@<label>}:z      zset  member → score
//	rostrum:{env}:board:{name@<label>}:m      hash  member → "total reached_at" (ScoreHoldsState: only saturated or floored members)
//	rostrum:{env}:board:{name@<label>}:i      set   event ids counted
//	rostrum:{env}:board:{name@<label>}:w      hash  the period's applied ranges and generation (as the board's w above)
//	rostrum:{env}:board:{name@<label>}:n      hash  the period's counters
//	rostrum:{env}:board:{name@<label>}:st     hash  the period's settle state: frozen (its label), busy, cursor, members
//	rostrum:{env}:board:{name@<label>}:S      list  its settled snapshot; S:i its info, S:j its record while it is copied
//	rostrum:{env}:board:{name@<label>}:d      set   removals deferred while it is copied
//	rostrum:{env}:{rostrum:{env}:generation}:board-periods
//	                                          zset  registry, one per environment on the generation marker's slot:
//	                                                "<name>@<label>" → Unix ms the period's slot expires (registry.go)
//	rolling and windows:
//	rostrum:{env}:board:{name}:z:<j>          zset  window j: member → score
//	rostrum:{env}:board:{name}:m              hash  member → "reached_at total_0 … total_k" (windows: packed with its slices)
//	rostrum:{env}:board:{name}:x              hash  window j → last subtracted slice (in its own slices)
//	rostrum:{env}:board:{name}:e              hash  windows: time (ms, before grace) → members whose first slice leaves a window then
//	rostrum:{env}:board:{name}:s              zset  slices held (score = slice index); windows: those with an id set
//	rostrum:{env}:board:{name}:s:<slice>      hash  rolling: member → sum of the slice
//	rostrum:{env}:board:{name}:s:<slice>:i    set   event ids counted in the slice
//	rostrum:{env}:board:{name}:q<q>:s…        windows: the same, for windows whose slice is q board slices
//	rostrum:{env}:board:{name}:b              hash  rolling decay boards: k the base, rebases: moves made
//	total boards (decay.go):
//	rostrum:{env}:board:{name}:T:z            zset  member → score (decay: the sum S)
//	rostrum:{env}:board:{name}:T:m            hash  member → "total reached_at" (decay: "S reached_at")
//	rostrum:{env}:board:{name}:T:i:<bucket>   set   event ids (bucket: UTC day, or half-life index)
//	rostrum:{env}:board:{name}:T:b            hash  k: the decay base, rebases: moves made
//	periodic boards that settle (settle.go, docs/DESIGN.md §8):
//	rostrum:{env}:board:{name}:st             hash  frozen: the newest period recorded (the periods' own st above)
//	rostrum:{env}:board:{name}:SL             zset  settled labels kept (score = period start)
//	rostrum:{env}:board:{name}:o              hash  label → record to publish; "c:<label>" → claim
//
// (the env is literal text; the braces are the hash tag: the board's name,
// or the name and a period's label joined by "@", which board names do
// not contain).
//
// # One hash tag per period
//
// Each period of a periodic board keeps, in its own slot,
// everything its scripts touch, its own applied ranges and generation
// included: exactly once holds per period. Apply sends one call per period
// the batch has events or removals of, plus the period of the batch's
// newest record time (the current one), each with every partition's
// covered offsets and only that period's events; the common batch (one
// period) is still one call per board. Each call is atomic and idempotent
// on its own, so a crash between two periods' calls is repaired by the
// redelivery or the log replay, each period skipping what it applied. A
// period's ranges stay one per partition while it is current; a removal
// that lists a past period adds a range there. A record with an event of a
// period is always sent to it (a period is a function of the event time,
// and a removal names its periods), so a gap in a period's ranges holds no
// event of it, except offsets still to be replayed after a Redis loss, as
// on any board.
//
// A node can lose one period's keys alone; the registry (registryKey, on
// the slot of the environment's generation marker, so that losing it
// changes the generation) tells such a period from a new one, and only a
// registration that added the label stamps the period's generation, so
// the loss makes the processor adopt again and replay its log (registry.go
// states the crash cases). The registration is one extra round trip, two
// when the label was new, per new period per process.
//
// Settlement freezes and copies a period in its slot (settle.lua: the
// period's own st hash, whose frozen flag apply.lua checks), keeps the
// record there, and settled.lua writes it into the board's outbox and
// index in the board's slot only while the board's frozen mark is below
// the label, moving the mark in the same step: the record is written once across the two slots. A removal from
// settled snapshots goes to each settled period kept, in its slot. The
// frozen flag is per period: a period older than the first one the board
// ever settled is never frozen, so its lagging events are still counted
// (such a period is never settled or published).
// Each script declares every key it touches, also the slice keys an expiry
// reads (Expire reads which ones first): while Redis Cluster migrates the
// board's slot key by key, it refuses such a script whole (TRYAGAIN, and
// the batch is retried) instead of running it until the first key that has
// moved, keeping the writes before it.
// Period keys expire at the end of the period Retention periods later plus
// grace; slice keys are deleted by Expire once no window needs them. A
// board removed from the configuration leaves its keys behind.
//
// # Total boards and decay
//
// A total board keeps one ranking that never resets. With decay it ranks by
// a value that halves every half-life: each event adds value·W(ts) to an
// integer sum relative to the board's base, and the base moves by whole
// half-lives (every sum divided by a power of two, in the script that also
// records the new base) before the sums could leave the 2^53 exact range;
// reads divide by the decay from the base to the read's clock.
// boarddef/decay.go states the formulas and what is rounded, decay.go what
// the store keeps.
//
// # Settled periods
//
// A periodic board settles each period once its end + grace has passed on
// the settle clock (Store.Settle's now). settle.lua freezes it (field
// "frozen" of the st hash: period labels of one board sort in time order,
// and apply.lua finds an event of a period at or below it late), copies
// its top SettleTop members SettlePage at a time, and in a call of its own
// writes the period's record into the outbox hash: freeze, snapshot and
// pending record happen once whoever calls, however often. ClaimSettled
// and AckSettled (outbox.lua) hand the records to the publisher.
//
// # Redis lost its data
//
// Board state is not idempotent, so it is never rebuilt past the applied
// ranges: when Redis lost its data it lost the ranges too, and replaying
// the write-ahead logs through Apply, in any order and concurrently with
// new batches, counts each retained record once. The board watermark hash
// carries the generation adopted (Adopt); a script that finds another one
// refuses to apply (ranking.ErrRedisReset), so a processor replays its log before
// it applies new batches. Adopt overwrites the stamp: a board may hold
// another generation without having lost its keys (a processor that read
// the marker just before a loss stamped the emptied Redis with it, or the
// marker alone was lost), and a stamp that kept it would refuse every call
// for ever. What no log holds any more (and no Kafka rewind re-reads) is
// lost for the boards.
//
// # Member reads
//
// Store.Standings reads members on many boards at once (members.go): it
// plans each ranking's keys with the same key builder as Top, groups the
// rankings by the Redis Cluster hash slot of their keys (slot.go computes
// it as Redis does), and runs one members.lua call per slot, all in one
// pipeline. No key layout is assumed: a ranking whose keys span two slots
// is refused, and rankings that share a slot share a call.
//
// # Scripts
//
// Each Lua script is a file in lua/, embedded and listed in scripts.go; its
// header states its KEYS, ARGV and reply, and it includes the shared Lua
// (consts.lua first, then score.lua, ranges.lua and the others it needs)
// with "--! include"; an included file defines locals only. Every call goes
// through internal/redisscript, which loads the scripts when Redis lost
// them and runs again only the calls that failed with NOSCRIPT.
//
// A script's ARGV is written by one Go struct (scriptargs.go: applyArgs
// for apply.lua, and so on), whose fields are its arguments in order, and
// read by the script once, at its top, into a table A under the same names,
// which its header lists. The constants both languages spell (board kinds,
// ops, read modes, replies, hash fields, bounds) are declared in
// luaconsts.go alone; go generate writes them into lua/consts.lua
// (KIND_PERIOD for kindPeriod), and a test fails when that file is not
// current.
//
// The package imports board/boarddef, codec, ranking, internal/redisscript,
// internal/glob, go-redis and the standard library (internal/luaconst,
// which go generate runs, the standard library only). board/boarddef
// imports none of them but codec.
package board
