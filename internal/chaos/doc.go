// Package chaos is the fault-injection harness of rostrum's reliability
// tests: it runs processors as child processes against a real redis-server
// (or Redis Cluster) and the in-process kfake broker, injects faults from a
// seeded schedule while a generated trace streams in, and then compares
// everything rostrum produced with the reference model (internal/model).
//
// What it checks (Check), and how it counts:
//
//   - Redis state: every member of every room, register by register
//     (value and event time of audio, volume, video, role and presence,
//     and the member's newest time), and every ranking, member by member
//     and score by score, against the model fed each good input event
//     once. A register or member Redis lacks or holds older than the model
//     is lost; one Redis holds newer than the model, or a member or ranked
//     entry the model does not have, is an effect no input explains:
//     applied twice.
//   - Leaderboards (boards.yaml): the board model (internal/boardmodel) is
//     fed the input records with board events as Kafka holds them (per
//     partition in offset order, with their record timestamps, which
//     decide lateness), and every period of every periodic board and every
//     window of the others is compared member by member: a member missing,
//     or with a total or reached_at below the model's, is lost; one the
//     model does not rank, or above the model's, is applied twice; a member
//     at another rank while every total agrees is a mismatch. The board
//     trace carries scores in tenths (weekly-score has scale 10) and
//     remove events for cheaters (CheaterBoards): a cheater's events and
//     removals share one partition, so the model, which applies partitions
//     one after another, puts each removal where every processor did,
//     unless Redis lost its data (Input.RemovalOrderLost): the WAL replays
//     then apply a partition's records in any order, and a removed member
//     is only checked to be absent or at most its total without removals
//     (more is applied twice). The test fails when the trace held no
//     removal or no decimal value. CheckExpiry
//     then expires the rolling and windows boards at chosen times, in Redis
//     and in the model, and compares again.
//   - Output topic, per room: seqs 1..n without gaps (each missing seq is
//     lost); a repeated seq must repeat identical content (a different one
//     is applied twice: one change counted twice); two consecutive seqs
//     with the same list are applied twice (a change published twice under
//     two seqs); a member present in two consecutive lists keeps its slot;
//     the last list holds exactly the model's top-N set (each model member
//     missing from it is lost).
//   - DLQ: the distinct DLQ records equal the distinct bad input records
//     and the records with a late board event (whose reason must say
//     late); a record missing is lost, a good record in the DLQ is lost
//     too (its events were not applied).
//
// Because member registers are last-writer-wins and idempotent, a batch
// that reaches Redis twice cannot change state twice; "applied twice"
// therefore counts what would show a double effect anywhere rostrum keeps
// one: a state ahead of the model, a seq reused for different content, a
// stable-list change published under two seqs.
package chaos
