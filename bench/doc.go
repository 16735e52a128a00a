// Package bench is `rostrum-dev bench`: an end-to-end benchmark of the real
// pipeline against a Kafka broker and a real redis-server on one machine,
// with two yardsticks measured in the same run.
//
// A run generates a named, seeded workload (Workloads: meeting, town-hall,
// churn) as ready-made record values, then runs its modes one after the
// other, each on an emptied Redis (FLUSHALL) and its own topics:
//
//   - rostrum: the records are preloaded into the input topics, then the
//     processor runs, wired as `rostrum run` wires it (WAL with fsync, Redis
//     sink, stable merge, output, commits, Prometheus observer), until it has
//     consumed every record. Then, on fresh topics, a producer offers the
//     same records at a fixed rate (default: half the flat-out rate) while a
//     second processor runs, to measure latency under a load it keeps up
//     with.
//   - naive: the design rostrum replaces, over the same preloaded records: a
//     plain consumer group and, per event, one blocking round trip each for
//     ZADD, ZREVRANGE 0 6 and a produce of the top list. Capped by time.
//   - ceiling: one ZADD per event of the same rooms and members, in
//     pipelines of 1024 over 4 connections, with nothing else: what Redis
//     allows on this machine.
//
// Each mode reports events/s and, over the same window, Redis commands and
// round trips per batch and per event (INFO and a go-redis hook), this
// process's allocations and CPU per event, Redis's CPU, Redis memory per
// ranked member and WAL bytes per event. Latency is measured from the time
// a record was produced to the publication of the output it caused: every
// event's ts is set to its record's produce time, and an output's ts is the
// newest event time of the batch for its room, so the output record's
// timestamp (set by the processor's producer client) minus its ts is the
// latency of the freshest event it reflects. docs/PERFORMANCE.md describes
// the method and the results.
//
// The Kafka broker is in process (kfake) unless brokers are given, so this
// process's CPU and allocations include the broker's; the report says so.
//
// The gateway workload (RunGateway, `rostrum-dev bench --workload gateway`)
// drives the callback gateway over keep-alive HTTP connections, beside a
// raw franz-go producer writing the same records. The gateway runs in a
// child process, this binary re-executed with GatewayChildEnv set (main,
// or a test binary's TestMain, hands it to GatewayChildMain), so that its
// own allocations and CPU per request (its HTTP server, the gateway, its
// producer) are measured apart from the HTTP clients' and the broker's.
// The child speaks a line protocol on its stdin and stdout (see
// GatewayChildMain) and stops when its stdin closes or its parent dies.
package bench
