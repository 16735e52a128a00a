package control

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/problem"
)

// Handler returns the HTTP API:
//
//	POST /v1/rooms/{room}/recording/start   {"by", "params"?}       201 | 409
//	POST /v1/rooms/{room}/recording/stop    {"by", "recording_id"?} 200 | 409
//	GET  /v1/rooms/{room}/recording                                  200
//	PUT  /v1/rooms/{room}/layout[?persist=true]  a JSON object       200 {"version"} + ETag | 412
//	GET  /v1/rooms/{room}/layout                                     200 + ETag | 304 | 404
//
// Every request needs "Authorization: Bearer <token>" (401) unless the
// Service is Insecure; with no tokens configured it is refused (403).
// Writes (POST, PUT) need "Content-Type: application/json" (415): a page
// of another site can post a form here, but JSON only after a CORS
// preflight, so no such page can start a recording.
// Errors are RFC 9457 problems (internal/problem): 400 bad JSON, missing or invalid "by",
// invalid room id or Idempotency-Key; 404 other paths under these
// prefixes; 405 another method on a route (with Allow); 412 a stale
// If-Match (with the current "version"); 413 a body over
// Config.MaxBodyBytes; 415 a write without the JSON content type; 503
// Redis or Kafka unavailable. A 409 is not a problem: it carries the
// current state, with "error" saying why.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/rooms/{room}/recording/start", s.serveStart)
	mux.HandleFunc("POST /v1/rooms/{room}/recording/stop", s.serveStop)
	mux.HandleFunc("GET /v1/rooms/{room}/recording", s.serveRecording)
	mux.HandleFunc("PUT /v1/rooms/{room}/layout", s.servePutLayout)
	mux.HandleFunc("GET /v1/rooms/{room}/layout", s.serveLayout)
	return s.guard(problem.Handler(mux)) // the mux's 404 and 405 as problems
}

// guard checks the credentials and the room id before any route runs.
func (s *Service) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case s.opt.Tokens != nil:
			if !s.opt.Tokens.Allow(r) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rostrum control"`)
				writeError(w, http.StatusUnauthorized, "missing or invalid bearer token")
				return
			}
		case !s.opt.Insecure:
			writeError(w, http.StatusForbidden, "control API disabled: start rostrum with --control-token-file (or --control-insecure)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

type startBody struct {
	By     string          `json:"by"`
	Params json.RawMessage `json:"params"`
}

type stopBody struct {
	By          string `json:"by"`
	RecordingID string `json:"recording_id"`
}

func (s *Service) serveStart(w http.ResponseWriter, r *http.Request) {
	room, idem, ok := s.roomAndKey(w, r)
	if !ok || !problem.RequireJSON(w, r) {
		return
	}
	var b startBody
	if !s.decode(w, r, &b) {
		return
	}
	if !validBy(w, b.By) {
		return
	}
	params, err := compactObject(b.Params, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, "params: "+err.Error())
		return
	}
	a, err := s.Start(r.Context(), room, b.By, params, idem)
	s.writeAnswer(w, a, err)
}

func (s *Service) serveStop(w http.ResponseWriter, r *http.Request) {
	room, idem, ok := s.roomAndKey(w, r)
	if !ok || !problem.RequireJSON(w, r) {
		return
	}
	var b stopBody
	if !s.decode(w, r, &b) {
		return
	}
	if !validBy(w, b.By) {
		return
	}
	if b.RecordingID != "" && !validID(b.RecordingID) {
		writeError(w, http.StatusBadRequest, "recording_id must be 1-128 bytes of [A-Za-z0-9._:@-]")
		return
	}
	a, err := s.Stop(r.Context(), room, b.By, b.RecordingID, idem)
	s.writeAnswer(w, a, err)
}

func (s *Service) serveRecording(w http.ResponseWriter, r *http.Request) {
	room, _, ok := s.roomAndKey(w, r)
	if !ok {
		return
	}
	body, err := s.Recording(r.Context(), room)
	s.writeAnswer(w, Answer{Status: http.StatusOK, Body: body}, err)
}

func (s *Service) servePutLayout(w http.ResponseWriter, r *http.Request) {
	room, _, ok := s.roomAndKey(w, r)
	if !ok || !problem.RequireJSON(w, r) {
		return
	}
	raw, ok := s.readBody(w, r)
	if !ok {
		return
	}
	body, err := compactObject(raw, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, "layout: "+err.Error())
		return
	}
	persist := false
	if p := r.URL.Query().Get("persist"); p != "" {
		if persist, err = strconv.ParseBool(p); err != nil {
			writeError(w, http.StatusBadRequest, "persist must be true or false")
			return
		}
	}
	ifMatch := ""
	if h := r.Header.Get("If-Match"); h != "" {
		if ifMatch = parseETag(h); ifMatch == "" {
			problem.Write(w, http.StatusPreconditionFailed, problem.PreconditionFail, "If-Match names no layout version", nil)
			return
		}
	}
	v, err := s.PutLayout(r.Context(), room, body, ifMatch, persist)
	switch {
	case errors.Is(err, ErrStale):
		problem.Write(w, http.StatusPreconditionFailed, problem.PreconditionFail, fmt.Sprintf("layout is at version %d, If-Match names %s", v, ifMatch), map[string]any{"version": v})
	case err != nil:
		s.writeAnswer(w, Answer{}, err)
	default:
		w.Header().Set("ETag", etag(v))
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"version":%d}`, v))
	}
}

func (s *Service) serveLayout(w http.ResponseWriter, r *http.Request) {
	room, _, ok := s.roomAndKey(w, r)
	if !ok {
		return
	}
	v, body, err := s.Layout(r.Context(), room)
	switch {
	case err != nil:
		s.writeAnswer(w, Answer{}, err)
	case v == 0:
		writeError(w, http.StatusNotFound, "no layout stored for room "+room)
	default:
		w.Header().Set("ETag", etag(v))
		if inm := r.Header.Get("If-None-Match"); inm != "" && matchesAny(inm, v) {
			w.Header().Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

// roomAndKey validates the room id and the Idempotency-Key header.
func (s *Service) roomAndKey(w http.ResponseWriter, r *http.Request) (room, idem string, ok bool) {
	room = r.PathValue("room")
	if !validID(room) {
		writeError(w, http.StatusBadRequest, "invalid room id: want 1-128 bytes of [A-Za-z0-9._:@-]")
		return "", "", false
	}
	idem = r.Header.Get("Idempotency-Key")
	if idem != "" && !validKey(idem) {
		writeError(w, http.StatusBadRequest, "invalid Idempotency-Key: want 1-128 bytes of [A-Za-z0-9._:@/+=-]")
		return "", "", false
	}
	return room, idem, true
}

func (s *Service) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opt.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes (--control-max-body-bytes)", s.opt.MaxBodyBytes))
		} else {
			writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		}
		return nil, false
	}
	return b, true
}

func (s *Service) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	b, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return false
	}
	if d.More() {
		writeError(w, http.StatusBadRequest, "bad JSON: more than one value")
		return false
	}
	return true
}

func (s *Service) writeAnswer(w http.ResponseWriter, a Answer, err error) {
	switch {
	case errors.Is(err, ErrUnconfirmed):
		writeError(w, http.StatusServiceUnavailable, "the change was made on the Redis primary but not confirmed by --control-replicas replicas in time; it is published if it survives: read the state, or retry with the same Idempotency-Key")
	case err != nil:
		// The cause (a Redis or Kafka error) is logged, never sent.
		s.lg.Warn("control request failed", zap.Error(err))
		writeError(w, http.StatusServiceUnavailable, "Redis or Kafka did not answer in time; retry (with the same Idempotency-Key)")
	default:
		writeJSON(w, a.Status, a.Body)
	}
}

func validBy(w http.ResponseWriter, by string) bool {
	if by == "" {
		writeError(w, http.StatusBadRequest, `"by" is required (the user id acting)`)
		return false
	}
	if !validID(by) {
		writeError(w, http.StatusBadRequest, `"by" must be 1-128 bytes of [A-Za-z0-9._:@-]`)
		return false
	}
	return true
}

// validID reports whether id is 1–128 bytes of [A-Za-z0-9._:@-], the
// rule for room and user ids everywhere in rostrum.
func validID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@-", c) >= 0) {
			return false
		}
	}
	return true
}

func validKey(k string) bool {
	if len(k) == 0 || len(k) > 128 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@/+=-", c) >= 0) {
			return false
		}
	}
	return true
}

// compactObject checks that raw is one JSON object and compacts it. An
// empty raw is {} when optional.
func compactObject(raw []byte, optional bool) ([]byte, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (optional && bytes.Equal(t, []byte("null"))) {
		if optional {
			return []byte("{}"), nil
		}
		return nil, errors.New("a JSON object is required")
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, errors.New("not a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// parseETag returns the version an If-Match names: "*", or the digits of
// "N", W/"N" or N; "" when it names none.
func parseETag(h string) string {
	h = strings.TrimSpace(h)
	if h == "*" {
		return "*"
	}
	h = strings.TrimPrefix(h, "W/")
	h = strings.Trim(h, `"`)
	if n, err := strconv.ParseInt(h, 10, 64); err != nil || n < 1 {
		return ""
	}
	return h
}

// matchesAny reports whether an If-None-Match list names version.
func matchesAny(h string, version int64) bool {
	want := strconv.FormatInt(version, 10)
	for _, t := range strings.Split(h, ",") {
		if v := parseETag(t); v == "*" || v == want {
			return true
		}
	}
	return false
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}

// writeError answers with an RFC 9457 problem (internal/problem) whose
// code follows from status.
func writeError(w http.ResponseWriter, status int, reason string) {
	problem.Write(w, status, problem.CodeFor(status), reason, nil)
}
