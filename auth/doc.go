// Package auth checks the credentials of rostrum's HTTP surfaces: bearer
// tokens read from a file (one per line, several at once so a token can be
// rotated without downtime, re-read on demand) and HMAC-SHA256 signatures
// of callback requests, timestamped (bound to the method, the path and a
// time) or of the body only (hmac.go). Every comparison takes constant
// time, and no token or secret ever appears in an error or a log line.
//
// Invariants:
//   - A Reload that fails (an unreadable file, no entry, with MinBytes an
//     entry too short) leaves the set in force in force; one that succeeds
//     replaces the whole set at once and reports the change in counts
//     (Change), never in values.
//   - The zero Tokens and the zero Secrets accept nothing.
//
// One Tokens value serves each surface that needs one (the read API, the
// control API, the board administration route, the gateway); it is safe
// for concurrent use, and Reload may run while requests are being checked.
package auth
