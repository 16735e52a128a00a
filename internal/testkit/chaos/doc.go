// Package chaos is the fault-injection harness of rostrum's reliability
// tests: it runs processors as child processes, configured as `rostrum run`
// configures them by default (ProcessorConfig), against a real
// redis-server (or Redis Cluster) and the in-process kfake broker, injects
// faults from a seeded schedule while a generated trace streams in, and
// then compares everything rostrum produced with the reference models
// (internal/testkit/model, internal/testkit/boardmodel).
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
//   - Leaderboards (boards.yaml): the board model (internal/testkit/boardmodel) is
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
//   - Decay boards (checkdecay.go): their base moves while the processors
//     run, at a moment the test sets (Boards, or BoardsYAML for a
//     processor run with --config, as internal/testkit/soak runs it); CheckDecay
//     compares the base, the integer sums (and a rolling board's slice
//     sums) and the reads at a fixed time exactly with the model, after
//     the faults and at the end, checks that their late events are in the
//     DLQ with a reason saying late, then rebases both at chosen times and
//     compares again. Check runs it on the decay boards of its Input
//     (Report.Decay), so that one Input holds every board the processors
//     run and each is compared with the model that fits it.
//   - Output topic, per room: a room the model never saw is applied
//     twice; seqs 1..n without gaps (each missing seq is lost); a repeated
//     seq must repeat identical content (a different one is applied twice:
//     one change counted twice), but for the documented known limit of an
//     output in flight across a Redis data loss (Input.inFlightAcrossLoss),
//     counted apart; two consecutive seqs with the same list
//     are applied twice (a change published twice under two seqs); a
//     member present in two consecutive lists keeps its slot; every member
//     of every list must be explained by its own events, whatever subset
//     of them a processor had applied (Input.shownProblem: an event of it
//     at or before the list's time that ranks it, a score time that is one
//     of its events' times, field values its events set); the last list
//     holds exactly the model's top-N set (each model member missing from
//     it is lost).
//   - Ranking order: a ranking whose members and scores all agree with the
//     model but whose order does not is a mismatch.
//   - DLQ, by origin (topic, partition, offset headers): every bad input
//     record and every record with a late board event (whose reason must
//     say late) must be there with its bytes, two identical bad records as
//     two; a record missing is lost, a good record in the DLQ is lost too
//     (its events were not applied). Repeats of one origin (a redelivered
//     batch) are counted, not failed.
//   - Settled periods (settle.go): every period the board model settles is
//     on {env}.boards.settled once (a repeat must carry the same bytes),
//     and its record and its snapshot in Redis hold the model's frozen
//     ranking; no other period is there.
//
// Every fault is also counted as having struck work in flight or not
// (Schedule.Hits; the children's state files, inflight.go), and the full
// run fails when a kind never did.
//
// Because member registers are last-writer-wins and idempotent, a batch
// that reaches Redis twice cannot change state twice; "applied twice"
// therefore counts what would show a double effect anywhere rostrum keeps
// one: a state ahead of the model, a seq reused for different content, a
// stable-list change published under two seqs.
package chaos
