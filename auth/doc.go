// Package auth checks the credentials of rostrum's HTTP surfaces: bearer
// tokens read from a file (one per line, several at once so a token can be
// rotated without downtime, re-read on demand) and HMAC-SHA256 signatures
// of a request body. Every comparison takes constant time, and no token or
// secret ever appears in an error or a log line.
//
// One Tokens value serves each surface that needs one (the gateway, the
// control API); it is safe for concurrent use, and Reload may run while
// requests are being checked.
package auth
