// Package meeting generates simulated meetings: deterministic event
// sequences of named scenarios (a lecture with a noisy audience, a lively
// discussion, a town hall with hand-overs of the host role, screen-share
// hand-overs with a spotlight), as the meeting system's callbacks would
// report them.
//
// Two users share it, and it is its own package so that neither depends on
// the other: `rostrum demo` (package demo) plays the scenarios in real time
// into the callback topics, and the flicker benchmark (package bench/flicker,
// run by rostrum-dev) replays them on their own clock. The demo ships in the
// production binary; the benchmark, with its charts, does not.
//
// Generate is a pure function of its arguments: the same Scenario, duration
// and seed give the same events, in event-time order, starting at BaseTS
// (math/rand/v2's PCG seeded from the seed and the scenario's name; no
// clock, no map iteration).
package meeting
