package problem_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/internal/problem"
)

// TestHandler: a ServeMux's 404 and 405 and an http.Error answer as
// problems, without their text; answers already problems, JSON or below
// 400 pass through.
func TestHandler(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /thing", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "thing") })
	mux.HandleFunc("GET /broken", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "dial tcp 10.0.0.1:6379: secret detail", http.StatusInternalServerError)
	})
	mux.HandleFunc("GET /gone", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, http.StatusNotFound, problem.NotFound, "unknown room", nil)
	})
	mux.HandleFunc("GET /conflict", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		_, _ = io.WriteString(w, `{"state":"recording"}`)
	})
	h := problem.Handler(mux)
	for _, c := range []struct {
		method, path string
		status       int
		code         string // "": not a problem
		detail       string
	}{
		{"GET", "/thing", 200, "", ""},
		{"GET", "/nowhere", 404, problem.NotFound, "no such route"},
		{"POST", "/thing", 405, problem.MethodNotAllowed, ""},
		{"GET", "/broken", 500, problem.Internal, ""},
		{"GET", "/gone", 404, problem.NotFound, "unknown room"},
		{"GET", "/conflict", 409, "", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
		body := rec.Body.String()
		if rec.Code != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, rec.Code, c.status)
		}
		ct := rec.Header().Get("Content-Type")
		if c.code == "" {
			if ct == problem.ContentType {
				t.Errorf("%s %s: answered a problem: %s", c.method, c.path, body)
			}
			continue
		}
		var d problem.Details
		if ct != problem.ContentType || json.Unmarshal([]byte(body), &d) != nil {
			t.Errorf("%s %s: %q %q, want a problem", c.method, c.path, ct, body)
			continue
		}
		if d.Code != c.code || d.Status != c.status || (c.detail != "" && d.Detail != c.detail) {
			t.Errorf("%s %s: %+v, want code %s detail %q", c.method, c.path, d, c.code, c.detail)
		}
		if strings.Contains(body, "secret") || strings.Count(body, "{") != 1 {
			t.Errorf("%s %s: the handler's text leaked or the body is doubled: %s", c.method, c.path, body)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("DELETE", "/thing", nil))
	if rec.Header().Get("Allow") == "" {
		t.Error("405 without Allow")
	}
}
