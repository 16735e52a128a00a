// Package processor is rostrum's main loop: it consumes the callback topics of
// one environment as a Kafka consumer group and turns each poll batch into
// Redis ranking state and stable top-N output records.
//
// Per poll batch, in this order (the durability order; each step starts only
// after the one before it succeeded):
//
//  1. decode every record; a record that breaks a rule goes to the DLQ topic
//     with its reason (it is counted, never retried, never stops the batch);
//  2. append the whole batch to the WAL, one frame and one fsync;
//  3. fold the events per room, topic-partition and member;
//  4. apply all touched rooms to Redis in one pipelined round trip, each room
//     in one script guarded by its per-partition watermarks;
//  5. merge each touched room's raw top-N into its stable list (the
//     hysteresis by default, or seed 003's merge; see stable.go) and store
//     the lists and hysteresis states that changed (a second round trip,
//     compare-and-set on seq, on the ranking version and on the state, so a
//     list merged from a raw top-N that another processor changed meanwhile
//     is never stored);
//     meanwhile, on a second goroutine, apply the batch's leaderboard events
//     (boards.go), one script per board, each guarded by the board's applied
//     offset ranges, and then produce the DLQ records of events the scripts
//     found late;
//  6. publish the changed rooms' stable lists, and the DLQ records, and wait
//     for the broker's acknowledgements;
//  7. commit the batch's offsets;
//  8. prune WAL segments that only hold committed batches (by age and size).
//
// A crash anywhere before step 7 makes the group redeliver the batch; the
// watermarks make the second apply a no-op and the pending output stored in
// step 5 is published again, so Redis sees every event's effect exactly once
// and no stable-list change is lost. Rebalances are blocked while a batch is
// in flight (kgo.BlockRebalanceOnPoll), so offsets are never committed for a
// partition this processor no longer owns.
//
// Between batches, on the same goroutine, a timer steps the rooms whose
// hysteresis dwell or grace ended without new events (due.go); it stores and
// publishes like a batch and commits no offsets.
//
// A failing batch is retried in place with backoff and jitter while input
// fetching is paused and Ready reports not ready (backpressure.go). Redis
// losing its data is repaired from the WAL and the output topic
// (recover.go), also by processors that were down or idle at the time
// (generation.go).
//
// The processor depends on small interfaces (Store, Log) that the sink and
// wal packages implement; they never import it.
package processor
