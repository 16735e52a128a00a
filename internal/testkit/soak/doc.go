// Package soak runs rostrum for a long time at a steady load with faults
// and checks that it neither leaks nor drifts: `make soak` runs the HTTP
// gateway, three `rostrum run` processors with the leaderboards of
// internal/testkit/chaos/boards.yaml (chaos.BoardsYAML: the decay boards' base
// moves half-way through the run), redis-server (append-only file) and the
// in-process kfake broker for SOAK_MINUTES (default 30, at most 150) at
// half the flat-out rate measured through the gateway (at most 2,000,000
// records a run, which the oracle holds in memory), with a processor
// SIGKILL, a Redis restart with its data or a burst of broker errors every
// few minutes.
//
// Invariants it checks:
//
//   - Flat after the warm-up (the first fifth of the run): each process's
//     RSS, goroutines and open files, Redis's used memory, the WALs' size
//     and the consumer lag have a least-squares slope whose drift over the
//     window is within 10 % of the mean or a small floor (Slopes). Judged
//     in runs of 10 minutes or more; a shorter run reports the slopes.
//   - Nothing lost through the gateway: every record of every request
//     answered 2xx is in the input topics (Source.Reconcile), split by room
//     as the gateway splits arrays (Parts, written apart from gateway.Split).
//   - Final state equals the model of what the input topics hold
//     (internal/testkit/chaos.Check, as the chaos suite checks: internal/testkit/model for
//     meetings, internal/testkit/boardmodel for every board, the decay boards
//     included): nothing lost, nothing applied twice.
//
// The samples go to a CSV file and a chart (WriteChart); docs/RELIABILITY.md
// "Soak" holds those of a 30-minute run. The test is TestSoak: with
// ROSTRUM_SOAK_MINUTES set (make soak) the long run; without it, in
// go test ./... and so in make test, a 45-second run with one fault of
// each kind, on the same path and with the same checks but for the
// slopes' verdicts. It builds rostrum when ROSTRUM_SOAK_BIN is not set and
// is skipped in -short mode only.
package soak
