// Package httpserve runs every HTTP listener of rostrum (the live page and
// API of `run` and `demo`, the admin listener, the callback gateway) with
// the limits a slow or hostile client must meet, and serves TLS with a
// certificate that can be replaced while the server runs.
//
// Invariants:
//   - Every server has a header, read, write and idle timeout and a header
//     size limit (Limits; zero fields take the defaults documented there).
//     A client that trickles its headers or its body, or never reads the
//     answer, holds its connection for a bounded time.
//   - A streaming answer (server-sent events) lifts its own write deadline
//     with LiftWriteDeadline; nothing else does.
//   - Serve returns nil after a shutdown caused by its context, and stops
//     within Config.Grace of the context's end: requests still running
//     then are cut.
//   - A Cert's Reload that fails leaves the certificate in force in force.
package httpserve
