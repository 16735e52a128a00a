// Package testkit holds nothing itself: its sub-packages are rostrum's test
// support, kept apart from the production helpers in internal/.
//
//   - testenv: real servers for tests (redis-server on a free port, the
//     in-process kfake broker, Sentinel, Docker through testcontainers).
//   - model, boardmodel: the pure-Go reference models of the meeting ranking
//     and of the leaderboards, the oracles of the end-to-end, chaos and soak
//     tests.
//   - trace: seeded callback traces with duplicates, reordering and bad
//     records.
//   - chaos: the chaos suite and its checker (chaos.Check).
//   - soak: the soak (make soak; a short one in make test).
//   - browser: headless chromium for the page's browser tests.
//
// No production package imports them (docs/DESIGN.md §13).
package testkit
