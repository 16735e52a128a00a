// Package model is the pure-Go reference model of rostrum's live meeting
// ranking: the oracle that end-to-end and chaos tests compare Redis and the
// ranking topic with. It keeps every room in memory, has no I/O and no
// clock, and favours being obviously correct over being fast.
//
// # Semantics
//
// This is the contract the Redis implementation follows (docs/DESIGN.md §2, §3).
//
// Each (room, user) pair has a member state of seven last-writer-wins
// registers, each a (value, ts) pair:
//
//	register  initial value   written by
//	audio     0 (off)         audio events (0 off, 1 on)
//	volume    0               volume events (0..999)
//	video     0 (off)         video events (0 off, 1 on)
//	role      1 (student)     role events (the codec.Role number)
//	screen    0 (off)         screen_share events (0 off, 1 sharing)
//	spotlight 0 (off)         spotlight events (0 off, 1 on)
//	presence  0 (never seen)  every event: leave writes 2 (left),
//	                          every other type writes 1 (in)
//
// Every register starts at ts 0. An event writes a register when its ts is
// greater than the register's ts, or equal to it with a greater value. The
// tie-break makes the result independent of delivery order: a leave beats a
// join (or any implicit join) at the same millisecond, a higher role beats a
// lower one, audio on beats audio off, a louder volume beats a quieter one.
//
// So join only writes presence; audio, video, volume, role, screen_share
// and spotlight write their own register and are also an implicit join at their ts; leave writes
// presence 2. An event older than a register leaves that register alone,
// but may still write another one (an old audio event after a newer leave
// updates audio and leaves the member out).
//
// The member's time is the greatest ts of all its events, leave included.
// A member is ranked while its presence is 1 and its role is ranked
// (student, guest, cohost, host); broadcast_control, screen_picker and
// assistant never rank. A ranked member's score packs the fields of the
// ranking rules in their order, then the time in the unit that keeps a
// 2^38 ms window in the 53 bits (docs/DESIGN.md §4, §10). The model computes
// it with its own arithmetic (Model.score), not with the codec it checks;
// TestScoreTable pins both to hand-computed values. Events of types
// rostrum does not rank on (codec.TypeIgnored) and board events change
// nothing.
//
// A room's ranking is its ranked members by score, highest first; equal
// scores are ordered by user id, greatest byte string first, which is the
// order Redis's ZREVRANGE gives members of equal score.
//
// Because every register is a max over (ts, value) pairs and the time is a
// max over ts, applying events in any order, and applying an event more than
// once, gives the same state.
//
// A Model is not safe for concurrent use.
package model
