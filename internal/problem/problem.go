// Package problem writes the error answers of every rostrum HTTP surface
// (web, control, gateway) as RFC 9457 problem details:
//
//	Content-Type: application/problem+json
//	{"type":"urn:rostrum:problem:<code>","title":"…","status":N,"detail":"…",
//	 "code":"<code>"}
//
// type and code are stable: a client branches on them, never on detail or
// title. detail says what was wrong with this request; it never carries the
// text of a Redis or Kafka error (those are logged, and the answer names the
// class: "redis-unavailable", "kafka-unavailable").
//
// Handler wraps the outermost handler of a listener, so that the answers
// no route writes itself (an http.ServeMux's 404 and 405, http.Error) are
// problems too; RequireJSON is the content-type check of every write.
package problem

import (
	"encoding/json"
	"net/http"
)

// TypePrefix prefixes every problem type URI; the code follows it.
const TypePrefix = "urn:rostrum:problem:"

// ContentType is the media type of a problem answer.
const ContentType = "application/problem+json"

// Codes. Each is documented in docs/openapi.yaml (components.schemas.Problem).
const (
	BadRequest       = "bad-request"            // 400: a malformed parameter, path or body
	Unauthorized     = "unauthorized"           // 401: no valid credential
	Forbidden        = "forbidden"              // 403: the surface is closed
	NotFound         = "not-found"              // 404: no such route, room, board, period, window, member or layout
	MethodNotAllowed = "method-not-allowed"     // 405
	RequestTimeout   = "request-timeout"        // 408: the body did not arrive in time
	Conflict         = "conflict"               // 409: the state does not allow the change
	PreconditionFail = "precondition-failed"    // 412: If-Match names another version
	TooLarge         = "too-large"              // 413: a body over the limit
	UnsupportedMedia = "unsupported-media-type" // 415
	Unroutable       = "unroutable"             // 422: a room no route takes
	TooManyRequests  = "too-many-requests"      // 429: over the client's rate; see Retry-After
	Internal         = "internal"               // 500: an unexpected failure (logged)
	RedisUnavailable = "redis-unavailable"      // 500/503: Redis failed or did not answer in time
	Unavailable      = "unavailable"            // 503: busy, not ready, or the brokers did not acknowledge
)

var titles = map[string]string{
	BadRequest:       "Bad request",
	Unauthorized:     "Unauthorized",
	Forbidden:        "Forbidden",
	NotFound:         "Not found",
	MethodNotAllowed: "Method not allowed",
	RequestTimeout:   "Request timeout",
	Conflict:         "Conflict",
	PreconditionFail: "Precondition failed",
	TooLarge:         "Content too large",
	UnsupportedMedia: "Unsupported media type",
	Unroutable:       "Room not routable",
	TooManyRequests:  "Too many requests",
	Internal:         "Internal error",
	RedisUnavailable: "Redis unavailable",
	Unavailable:      "Service unavailable",
}

// Details is the body of a problem answer. Extra members (the gateway's
// request_id, control's current state) are added by Write's extra argument.
type Details struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
}

// New returns the details of a problem of code with status and detail.
func New(status int, code, detail string) Details {
	title, ok := titles[code]
	if !ok {
		title = http.StatusText(status)
	}
	return Details{Type: TypePrefix + code, Title: title, Status: status, Detail: detail, Code: code}
}

// CodeFor is the usual code of an error status, for surfaces whose answers
// have one code per status (control, the gateway).
func CodeFor(status int) string {
	switch status {
	case http.StatusBadRequest:
		return BadRequest
	case http.StatusUnauthorized:
		return Unauthorized
	case http.StatusForbidden:
		return Forbidden
	case http.StatusNotFound:
		return NotFound
	case http.StatusMethodNotAllowed:
		return MethodNotAllowed
	case http.StatusRequestTimeout:
		return RequestTimeout
	case http.StatusConflict:
		return Conflict
	case http.StatusPreconditionFailed:
		return PreconditionFail
	case http.StatusRequestEntityTooLarge:
		return TooLarge
	case http.StatusUnsupportedMediaType:
		return UnsupportedMedia
	case http.StatusUnprocessableEntity:
		return Unroutable
	case http.StatusTooManyRequests:
		return TooManyRequests
	case http.StatusServiceUnavailable:
		return Unavailable
	}
	return Internal
}

// Write answers with a problem of code, status and detail. extra, when not
// nil, is a JSON object whose members are added after the standard ones
// (members of the same name as a standard one are ignored).
func Write(w http.ResponseWriter, status int, code, detail string, extra map[string]any) {
	b := Marshal(New(status, code, detail), extra)
	h := w.Header()
	h.Set("Content-Type", ContentType)
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// Marshal returns d as JSON with the members of extra appended.
func Marshal(d Details, extra map[string]any) []byte {
	m := map[string]any{}
	for k, v := range extra {
		m[k] = v
	}
	for k, v := range map[string]any{"type": d.Type, "title": d.Title, "status": d.Status, "code": d.Code} {
		m[k] = v
	}
	if d.Detail != "" {
		m["detail"] = d.Detail
	}
	b, err := json.Marshal(m)
	if err != nil { // extra holds only JSON-able values of our own
		panic(err)
	}
	return b
}
