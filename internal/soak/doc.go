// Package soak runs rostrum for a long time at a steady load with faults
// and checks that it neither leaks nor drifts: `make soak` runs the HTTP
// gateway, three `rostrum run` processors with the leaderboards of
// internal/chaos/boards.yaml, redis-server (append-only file) and the
// in-process kfake broker for SOAK_MINUTES (default 30) at half the
// flat-out rate measured through the gateway, with a processor SIGKILL, a
// Redis restart with its data or a burst of broker errors every few
// minutes.
//
// Invariants it checks:
//
//   - Flat after the warm-up (the first fifth of the run): each process's
//     RSS, goroutines and open files, Redis's used memory, the WALs' size
//     and the consumer lag have a least-squares slope whose drift over the
//     window is within 10 % of the mean or a small floor (Slopes).
//   - Nothing lost through the gateway: every record of every request
//     answered 2xx is in the input topics (Source.Reconcile), split by room
//     as the gateway splits arrays (Parts, written apart from gateway.Split).
//   - Final state equals the model of what the input topics hold
//     (internal/chaos.Check: internal/model for meetings, internal/boardmodel
//     for the boards): nothing lost, nothing applied twice.
//
// The samples go to a CSV file and a chart (WriteChart); docs/RELIABILITY.md
// "Soak" holds those of a 30-minute run. The test is TestSoak, skipped
// unless ROSTRUM_SOAK_MINUTES is set.
package soak
