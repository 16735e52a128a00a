// Package processor is rostrum's main loop: it consumes the callback topics of
// one environment as a Kafka consumer group and turns each poll batch into
// Redis ranking state and stable top-N output records.
//
// Per poll batch, in this order (the durability order, batch.prepare then
// batch.run; each step starts only after the one before it succeeded, and a
// retry repeats only the steps not yet done):
//
//  1. decode every record and fold its events per room, topic-partition and
//     member (fold.go), and its board events into the batch's board batch;
//     a record that breaks a rule, or holds a board event already late on
//     arrival, becomes a DLQ record with its reason (it is counted, never
//     retried, never stops the batch);
//  2. append the whole batch to the WAL, one frame and one fsync;
//  3. publish the DLQ records of step 1 and wait for the broker's
//     acknowledgements;
//  4. apply all touched rooms to Redis in one pipelined round trip (one per
//     MaxRoomsPerApply rooms), each room in one script guarded by its
//     per-partition watermarks; a room whose member states and stable hash
//     the sink's state cache holds takes its stable step inside that script
//     (sink.Store.ApplyMerge) and is done;
//  5. merge every other touched room's raw top-N into its stable list (the
//     hysteresis by default, or seed 003's merge; see stable.go) and store
//     the lists and hysteresis states that changed (a second round trip,
//     compare-and-set on seq, on the ranking version and on the state, so a
//     list merged from a raw top-N that another processor changed meanwhile
//     is never stored);
//     when the batch holds board events, steps 4 and 5 run while a second
//     goroutine applies them (boards.go), one script per board, each guarded
//     by the board's applied offset ranges;
//  6. apply the boards if that has not happened yet (the offsets of a batch
//     without board events are usually carried to a later batch), then publish
//     the DLQ records of events the board scripts found late, then those of
//     members refused by the members cap (members.go), then the changed
//     rooms' stable lists, each time waiting for the acknowledgements;
//  7. commit the batch's offsets (not when a Redis rebuild rewound the
//     partitions);
//  8. prune WAL segments that only hold committed batches (by age and size,
//     at most once per Config.WALRetention.PruneEvery).
//
// With Config.PipelineBatches (off by default), steps 1 and 2 of a batch
// overlap steps 3 to 8 of the batch before it (pipeline.go): the next poll
// batch is decoded, folded and made durable in the WAL while the current
// one waits on Redis and the broker. Steps 3 to 8
// of the batches still run one batch after the other, in poll order, so
// Redis applies, outputs and commits keep that order.
//
// A crash anywhere before step 7 makes the group redeliver the batch; the
// watermarks make the second apply a no-op and the pending output stored in
// step 4 or 5 is published again, so Redis sees every event's effect exactly once
// and no stable-list change is lost. Rebalances are blocked while a batch is
// in hand (kgo.BlockRebalanceOnPoll) and allowed only with the pipeline
// empty, so offsets are never committed for a partition this processor no
// longer owns.
//
// Between batches, never beside a batch's steps 3 to 8, a timer steps the rooms whose
// hysteresis dwell or grace ended without new events (due.go); it stores and
// publishes like a batch and commits no offsets.
//
// A failing batch is retried in place with backoff and jitter while input
// fetching is paused and Ready reports not ready (backpressure.go). Redis
// losing its data is repaired from the WAL and the output topic
// (recover.go), also by processors that were down or idle at the time
// (generation.go).
//
// The processor depends on small interfaces (Store, Log, BoardStore) that
// the sink, wal and board packages implement; they never import it, and it
// never imports sink: the vocabulary the two share is package ranking
// (docs/DESIGN.md §13).
//
// The package's files, one line each, are mapped in docs/DESIGN.md §13
// ("The processor's files").
package processor
