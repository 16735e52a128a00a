// Package ranking is the vocabulary that rostrum's processor and its Redis
// sink share: what a batch changes in a room (RoomUpdate, Part,
// MemberUpdate, the member registers of MemberState), what an apply
// returns (RoomState, Ranked), what the stable step decides (StableUpdate,
// Merged, StableStep), what publication acknowledges (Ack), the rooms the
// hysteresis timer steps (DueRoom), what a restore starts from (PublishedList), the
// read model of the live page (RoomView, MemberView, RoomSummary) and the
// errors both sides branch on (ErrRedisReset, ErrUnknownRoom).
//
// It is pure: it imports codec and the standard library only, knows
// nothing of Kafka or Redis, and is imported by processor, sink, board
// and web (the reference models in internal/ keep their own, independent
// semantics, to stay oracles). processor and sink never import each
// other; the one place where the sink needs the processor's logic, the
// stable step of the state-cache path, is handed to it as a StableStep
// value (see docs/DESIGN.md §13).
//
// MemberState is the main piece of behaviour here: its last-writer-wins
// registers and their packed form are the meeting semantics every writer
// (the processor's fold, the sink's cache and Lua scripts)
// must agree on. The rules of a shown member (Flags, Urgent, AudioLeads,
// Drop) are the other: the processor's stable step applies them, and the
// flicker benchmark (bench/flicker) replays meetings through the same
// MemberState and the same rules, so that it measures the production
// ranking.
package ranking
