package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestErrorCodes checks every error answer of the API: its status and that
// its JSON body names the reason.
func TestErrorCodes(t *testing.T) {
	r := newRig(t, nil, func(o *Config) { o.MaxBodyBytes = 1024 })
	big := `{"by":"u-1","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`
	for _, tc := range []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		reason                   string
	}{
		{"no token", "GET", "/v1/rooms/r-1/recording", "", []string{"Authorization", ""}, 401, "bearer token"},
		{"wrong token", "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-1"}`, []string{"Authorization", "Bearer nope"}, 401, "bearer token"},
		{"not bearer", "GET", "/v1/rooms/r-1/layout", "", []string{"Authorization", "Basic " + testToken}, 401, "bearer token"},
		{"bad JSON", "POST", "/v1/rooms/r-1/recording/start", `{"by":`, nil, 400, "bad JSON"},
		{"unknown field", "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-1","who":"x"}`, nil, 400, "unknown field"},
		{"missing by", "POST", "/v1/rooms/r-1/recording/start", `{"params":{}}`, nil, 400, `"by" is required`},
		{"empty body", "POST", "/v1/rooms/r-1/recording/stop", ``, nil, 400, "bad JSON"},
		{"invalid by", "POST", "/v1/rooms/r-1/recording/stop", `{"by":"u 1"}`, nil, 400, `"by" must be`},
		{"params not an object", "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-1","params":[1]}`, nil, 400, "params: not a JSON object"},
		{"invalid room", "POST", "/v1/rooms/r%201/recording/start", `{"by":"u-1"}`, nil, 400, "invalid room id"},
		{"room too long", "GET", "/v1/rooms/" + strings.Repeat("r", 129) + "/recording", "", nil, 400, "invalid room id"},
		{"invalid Idempotency-Key", "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-1"}`, []string{"Idempotency-Key", "a b"}, 400, "Idempotency-Key"},
		{"oversized body", "POST", "/v1/rooms/r-1/recording/start", big, nil, 413, "body larger than 1024 bytes"},
		{"oversized layout", "PUT", "/v1/rooms/r-1/layout", `{"x":"` + strings.Repeat("a", 2000) + `"}`, nil, 413, "body larger than 1024 bytes"},
		// A form another site's page posts: never a write.
		{"start as a form", "POST", "/v1/rooms/r-1/recording/start", `{"by":"u-1"}`, []string{"Content-Type", "text/plain"}, 415, "Content-Type: application/json"},
		{"start as url-encoded", "POST", "/v1/rooms/r-1/recording/start", `by=u-1`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "Content-Type: application/json"},
		{"stop without a type", "POST", "/v1/rooms/r-1/recording/stop", `{"by":"u-1"}`, []string{"Content-Type", ""}, 415, "Content-Type: application/json"},
		{"layout as a form", "PUT", "/v1/rooms/r-1/layout", `{}`, []string{"Content-Type", "multipart/form-data; boundary=x"}, 415, "Content-Type: application/json"},
		{"layout not an object", "PUT", "/v1/rooms/r-1/layout", `[1,2]`, nil, 400, "not a JSON object"},
		{"layout bad JSON", "PUT", "/v1/rooms/r-1/layout", `{"tiles":`, nil, 400, "not a JSON object"},
		{"persist not a bool", "PUT", "/v1/rooms/r-1/layout?persist=maybe", `{}`, nil, 400, "persist"},
		{"unknown route", "GET", "/v1/rooms/r-1/recording/pause", "", nil, 404, "no such route"},
		{"wrong method", "DELETE", "/v1/rooms/r-1/layout", "", nil, 405, "method DELETE is not allowed"},
		{"no layout", "GET", "/v1/rooms/r-1/layout", "", nil, 404, "no layout stored"},
		{"stop while idle", "POST", "/v1/rooms/r-1/recording/stop", `{"by":"u-1"}`, nil, 409, "not recording"},
		{"stale If-Match", "PUT", "/v1/rooms/r-1/layout", `{}`, []string{"If-Match", `"7"`}, 412, "layout is at version 0"},
		{"If-Match * without layout", "PUT", "/v1/rooms/r-1/layout", `{}`, []string{"If-Match", `*`}, 412, "layout is at version 0"},
		{"If-Match not a version", "PUT", "/v1/rooms/r-1/layout", `{}`, []string{"If-Match", `"abc"`}, 412, "names no layout version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := r.do(tc.method, tc.path, tc.body, tc.headers...)
			if p.Status != tc.status {
				t.Fatalf("status %d %s, want %d", p.Status, p.Body, tc.status)
			}
			// A 409 carries the state; every other error is a problem.
			wantCT := "application/problem+json"
			if tc.status == 409 {
				wantCT = "application/json"
			}
			if ct := p.Header.Get("Content-Type"); ct != wantCT {
				t.Errorf("Content-Type %q, want %q", ct, wantCT)
			}
			m := p.json(t)
			why := "detail" // a 409 says why in "error", beside the state
			if tc.status == 409 {
				why = "error"
			}
			if s, _ := m[why].(string); !strings.Contains(s, tc.reason) {
				t.Errorf("%s %q, want it to say %q", why, m[why], tc.reason)
			}
			if tc.status != 409 && (m["code"] == nil || m["type"] == nil || m["status"] != float64(tc.status) || m["error"] != nil) {
				t.Errorf("not a problem: %v", m)
			}
			if tc.status == 401 && p.Header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if want := map[int]string{401: "unauthorized", 405: "method-not-allowed", 413: "too-large", 415: "unsupported-media-type"}[tc.status]; want != "" && m["code"] != want {
				t.Errorf("code %v, want %s", m["code"], want)
			}
			if tc.status == 405 && p.Header.Get("Allow") == "" {
				t.Error("405 without Allow")
			}
		})
	}

	// None of the refused writes (the forms above all) started a recording.
	if st := r.do("GET", "/v1/rooms/r-1/recording", "").json(t); st["state"] != "idle" || len(r.commands()) != 0 {
		t.Fatalf("after refused writes: %v, %d commands", st, len(r.commands()))
	}

	// 409 for a start while recording, and for a stop naming another
	// recording, each with the current state.
	won := r.do("POST", "/v1/rooms/r-2/recording/start", `{"by":"u-1","params":{"res":"1080p"}}`)
	if won.Status != 201 {
		t.Fatalf("start: %d %s", won.Status, won.Body)
	}
	w := won.json(t)
	again := r.do("POST", "/v1/rooms/r-2/recording/start", `{"by":"u-2"}`)
	other := r.do("POST", "/v1/rooms/r-2/recording/stop", `{"by":"u-2","recording_id":"not-this-one"}`)
	for _, p := range []reply{again, other} {
		m := p.json(t)
		if p.Status != 409 || m["recording_id"] != w["recording_id"] || m["token"] != w["token"] || m["state"] != "recording" || m["error"] == "" {
			t.Errorf("409 answer %d %s, want the current state %s", p.Status, p.Body, won.Body)
		}
	}
	stop := r.do("POST", "/v1/rooms/r-2/recording/stop", `{"by":"u-3","recording_id":"`+w["recording_id"].(string)+`"}`)
	m := stop.json(t)
	if stop.Status != 200 || m["state"] != "idle" || m["stopped_by"] != "u-3" || m["started_by"] != "u-1" ||
		m["token"].(float64) <= w["token"].(float64) || m["duration_ms"].(float64) != m["stopped_at"].(float64)-m["started_at"].(float64) {
		t.Fatalf("stop: %d %s", stop.Status, stop.Body)
	}
	late := r.do("POST", "/v1/rooms/r-2/recording/stop", `{"by":"u-4"}`)
	if late.Status != 409 || late.json(t)["stopped_by"] != "u-3" {
		t.Errorf("late stop: %d %s, want 409 with the stop's facts", late.Status, late.Body)
	}
}

// TestForbiddenWithoutTokens checks that a Service with no tokens refuses
// every request, reads too, unless it is insecure.
func TestForbiddenWithoutTokens(t *testing.T) {
	r := newRig(t, nil, nil)
	for _, insecure := range []bool{false, true} {
		svc, err := New(r.rc, r.pr, Config{Env: testEnv, CommandsTopic: commandTopic, LayoutTopic: layoutTopic, Insecure: insecure, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(svc.Handler())
		for _, req := range [][2]string{{"GET", "/v1/rooms/r-1/recording"}, {"GET", "/v1/rooms/r-1/layout"}, {"POST", "/v1/rooms/r-1/recording/start"}, {"PUT", "/v1/rooms/r-1/layout"}} {
			p := doHTTP(t, srv.URL, req[0], req[1], `{"by":"u-1"}`)
			switch {
			case !insecure && p.Status != http.StatusForbidden:
				t.Errorf("%v without tokens: %d %s, want 403", req, p.Status, p.Body)
			case !insecure && !strings.Contains(p.json(t)["detail"].(string), "--control-token-file"):
				t.Errorf("403 reason %s", p.Body)
			case insecure && req[0] == "GET" && p.Status == http.StatusForbidden:
				t.Errorf("%v insecure: 403", req)
			}
		}
		srv.Close()
	}
}

// TestLayout checks the layout's versions, compare-and-set, ETag and 304,
// persistence, and the compacted topic's records.
func TestLayout(t *testing.T) {
	r := newRig(t, nil, nil)
	put := func(body string, headers ...string) reply {
		return r.do("PUT", "/v1/rooms/r-5/layout", body, headers...)
	}
	p1 := put(`{"tiles": 4, "resolution": "1280x720"}`)
	if p1.Status != 200 || string(p1.Body) != "{\"version\":1}\n" || p1.Header.Get("ETag") != `"1"` {
		t.Fatalf("first put: %d %s %v", p1.Status, p1.Body, p1.Header)
	}
	got := r.do("GET", "/v1/rooms/r-5/layout", "")
	if got.Status != 200 || string(got.Body) != "{\"tiles\":4,\"resolution\":\"1280x720\"}\n" || got.Header.Get("ETag") != `"1"` {
		t.Fatalf("get: %d %q %v", got.Status, got.Body, got.Header)
	}
	if nm := r.do("GET", "/v1/rooms/r-5/layout", "", "If-None-Match", `"1"`); nm.Status != 304 || len(nm.Body) != 0 || nm.Header.Get("ETag") != `"1"` {
		t.Fatalf("If-None-Match current: %d %q", nm.Status, nm.Body)
	}
	if nm := r.do("GET", "/v1/rooms/r-5/layout", "", "If-None-Match", `"0", W/"1"`); nm.Status != 304 {
		t.Fatalf("If-None-Match list with a weak current tag: %d", nm.Status)
	}
	// Two writers read version 1; the first compare-and-set wins, the
	// second is told the version it lost to.
	if a := put(`{"tiles":9}`, "If-Match", `"1"`); a.Status != 200 || a.Header.Get("ETag") != `"2"` {
		t.Fatalf("CAS on the current version: %d %s", a.Status, a.Body)
	}
	b := put(`{"tiles":16}`, "If-Match", `"1"`)
	if b.Status != 412 || b.json(t)["version"].(float64) != 2 {
		t.Fatalf("CAS on a stale version: %d %s", b.Status, b.Body)
	}
	if nm := r.do("GET", "/v1/rooms/r-5/layout", "", "If-None-Match", `"1"`); nm.Status != 200 || string(nm.Body) != "{\"tiles\":9}\n" {
		t.Fatalf("If-None-Match stale: %d %q", nm.Status, nm.Body)
	}
	if c := put(`{"tiles":1}`, "If-Match", "*"); c.Status != 200 || c.Header.Get("ETag") != `"3"` {
		t.Fatalf("If-Match *: %d %s", c.Status, c.Body)
	}
	if d := put(`{"tiles":2}`); d.Status != 200 || d.Header.Get("ETag") != `"4"` {
		t.Fatalf("unconditional put: %d %s", d.Status, d.Body)
	}

	// Expiry with the room, unless persisted.
	k := roomKeys(testEnv, "r-5").Lay
	if ttl := r.rc.PTTL(t.Context(), k).Val(); ttl <= 0 {
		t.Fatalf("layout TTL %v, want --room-ttl", ttl)
	}
	if e := r.do("PUT", "/v1/rooms/r-5/layout?persist=true", `{"tiles":3}`); e.Status != 200 {
		t.Fatalf("persist: %d %s", e.Status, e.Body)
	}
	if ttl := r.rc.PTTL(t.Context(), k).Val(); ttl != -1 {
		t.Fatalf("persisted layout TTL %v, want none", ttl)
	}

	// The topic: one record per version, key the room, in order.
	recs := r.kafka.ReadAll(layoutTopic)
	if len(recs) != 5 {
		t.Fatalf("%d layout records, want 5", len(recs))
	}
	for i, rec := range recs {
		testenv.WantRecordKind(t, rec, "rooms.layout/1")
		var v struct {
			RoomID  string          `json:"room_id"`
			Version int64           `json:"version"`
			Persist bool            `json:"persist"`
			Layout  json.RawMessage `json:"layout"`
		}
		if err := json.Unmarshal(rec.Value, &v); err != nil || string(rec.Key) != "r-5" || v.RoomID != "r-5" || v.Version != int64(i+1) || v.Persist != (i == 4) {
			t.Fatalf("record %d: key %q %s (%v)", i, rec.Key, rec.Value, err)
		}
	}
	if string(recs[4].Value[strings.Index(string(recs[4].Value), `"layout":`):]) != `"layout":{"tiles":3}}` {
		t.Fatalf("last record %s", recs[4].Value)
	}
}
