// Package control decides a room's recording state (start, stop; exactly
// one of any number of concurrent requests wins) and keeps its layout
// parameters, in Redis, and publishes every change to Kafka through an
// outbox; Handler serves it as rostrum's control HTTP API (docs/DESIGN.md
// §12).
//
// Invariants:
//
//   - One decider. Each change is one Lua script on the room's hash slot
//     (the keys share sink.RoomPrefix's hash tag): no lock with a timeout,
//     no Redlock. Concurrent starts (stops) of a room are serialised by
//     Redis, and only the first one finding the state it needs wins.
//   - Fencing tokens only grow. A room's token is max(last + 1, Redis time
//     in ms), kept in a key without TTL, so neither an idle room expiring
//     nor a failover that lost the last writes hands out a token again.
//   - Outbox. The change and its outbox entry are one atomic step; the
//     record is produced (and acknowledged) before the HTTP answer; an
//     entry left by a crash is published later by any instance, with the
//     bytes the step wrote (same token), unless a lookup finds the record
//     already on its topic: once, also across a crash (outbox.go says
//     under which assumptions).
//   - Idempotent retries. The answer to a request with an Idempotency-Key
//     is stored in the same step as the change it reports.
//   - Layout versions only grow (a counter without TTL): an ETag never
//     names two different layouts of a room.
//
// Keys of room R in environment E (the room's prefix, then "ctl:"):
//
//	rostrum:E:{R}:ctl:seq        hash   token, layout            no TTL
//	rostrum:E:{R}:ctl:rec        hash   the current/last recording  none while recording, --room-ttl once stopped
//	rostrum:E:{R}:ctl:hist       list   finished recordings       --room-ttl
//	rostrum:E:{R}:ctl:out        hash   outbox entries + leases   no TTL (gone when empty)
//	rostrum:E:{R}:ctl:lay        hash   v, body, at               --room-ttl, or none with ?persist=true
//	rostrum:E:{R}:ctl:idem:A:K   string "<status> <body>"         --control-idempotency-ttl
//	rostrum:E:ctl:outbox         zset   "<room>\n<nonce>" → ms    one per environment (see outbox.go)
package control
