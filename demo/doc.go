// Package demo provides the embedded pieces of `rostrum demo`: an in-process
// Kafka broker (kfake, real Kafka protocol on a loopback port), a private
// redis-server process, a live meeting feeder (which `rostrum-dev simulate`
// runs too) and a console view of the published stable top lists. The
// pipeline itself is the real one that `rostrum run` starts. The demo ships
// in the production binary, so demo imports nothing of the benchmarks: its
// meetings come from internal/meeting.
package demo
