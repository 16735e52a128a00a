// Package dlq reads and redrives rostrum's dead-letter topic
// ({env}.callbacks.dlq, docs/DESIGN.md §2): Read selects its records,
// Summarize counts them by reason class, source topic and hour, and Redrive
// produces selected records back to the topic they came from, key and value
// unchanged, so that they are processed again after the cause was fixed.
//
// # Records and markers
//
// A DLQ record is the rejected record's key and value as received, with
// these headers (processor/publish.go):
//
//	rostrum-error          the one-line reason, e.g. "event[1].value: volume must be 0..999, got 1000"
//	rostrum-topic          the topic it was consumed from
//	rostrum-partition      its partition there (decimal)
//	rostrum-offset         its offset there (decimal)
//	rostrum-redriven-from  only on the DLQ copy of a redriven record that was rejected again:
//	                       the DLQ record it was redriven from, "dlq-topic/partition/offset"
//	content-type           application/json
//	rostrum-schema         callbacks.dlq/1 (docs/topics/dlq.md)
//
// A redriven record carries rostrum-redriven-from naming its DLQ record,
// and no other header. After a record is redriven, Redrive appends a
// marker to the DLQ: a null value with the header rostrum-redrive-of
// ("partition/offset" of the DLQ record), rostrum-redriven-to
// ("topic/partition/offset" of the new record), content-type and
// rostrum-schema (callbacks.dlq/1). Markers are how a later Redrive knows what was done: a marked
// record is skipped unless Selection.Again is set. Read and Summarize never
// count markers as records.
//
// # Invariants
//
//   - Reading never commits offsets and joins no group: inspecting a DLQ
//     changes nothing.
//   - Redrive never changes a record's key or value; it produces to the
//     topic named by rostrum-topic, partitioned by key like any producer.
//   - A marker is written only after the brokers acknowledged the redriven
//     record. A crash between the two redrives the record again next time,
//     which the member registers absorb (and board events with an id).
package dlq
