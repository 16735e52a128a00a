package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/web"
)

// meetingSource serves meetingRooms, the room of meetingRoom as r-1001, an
// empty room "quiet", and fails for "broken".
func meetingSource() *fakeSource {
	f := &fakeSource{rooms: meetingRooms()}
	f.view = func(room string) (ranking.RoomView, error) {
		switch room {
		case "r-1001":
			return meetingRoom(), nil
		case "quiet":
			return ranking.RoomView{Room: "quiet"}, nil
		case "broken":
			return ranking.RoomView{}, errors.New("sink: read room \"broken\": connection refused")
		}
		return ranking.RoomView{}, ranking.ErrUnknownRoom
	}
	return f
}

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

func decode(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestRoomTop(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Logger: zaptest.NewLogger(t)})
	res, body := get(t, s, "/v1/rooms/r-1001/top")
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
	var raw map[string]any
	decode(t, body, &raw)
	if got, want := keys(raw), []string{"raw", "room_id", "seq", "stable", "total_members"}; !slices.Equal(got, want) {
		t.Fatalf("room keys %v, want %v", got, want)
	}
	first := raw["stable"].([]any)[0].(map[string]any)
	if got, want := keys(first), []string{"audio", "role", "score", "screen_share", "spotlight", "ts", "user_id", "video", "volume"}; !slices.Equal(got, want) {
		t.Fatalf("member keys %v, want %v", got, want)
	}

	type member struct {
		UserID string  `json:"user_id"`
		Audio  uint8   `json:"audio"`
		Volume uint16  `json:"volume"`
		Video  uint8   `json:"video"`
		Role   string  `json:"role"`
		Score  float64 `json:"score"`
		TS     int64   `json:"ts"`
	}
	var v struct {
		RoomID  string   `json:"room_id"`
		Seq     int64    `json:"seq"`
		Members int      `json:"total_members"`
		Stable  []member `json:"stable"`
		Raw     []member `json:"raw"`
	}
	decode(t, body, &v)
	want := meetingRoom()
	if v.RoomID != "r-1001" || v.Seq != want.Seq || v.Members != want.Members || len(v.Stable) != 7 || len(v.Raw) != 7 {
		t.Fatalf("room %+v", v)
	}
	for i, m := range want.Stable {
		if got := v.Stable[i]; got != (member{m.UserID, m.Audio, m.Volume, m.Video, m.Role, m.Score, m.TS}) {
			t.Fatalf("stable[%d] = %+v, want %+v", i, got, m)
		}
	}
	for i, m := range want.Raw {
		if v.Raw[i].UserID != m.UserID || v.Raw[i].Score != m.Score {
			t.Fatalf("raw[%d] = %+v, want %+v", i, v.Raw[i], m)
		}
	}
	// Scores are integers below 2^53: written as digits, exact.
	if score := strconv.FormatFloat(want.Stable[0].Score, 'f', -1, 64); !strings.Contains(body, `"score":`+score+`,`) {
		t.Fatalf("score %s not written as an integer: %s", score, body)
	}
}

func TestRoomTopErrors(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource(), Logger: zaptest.NewLogger(t)})
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/v1/rooms/nobody/top", 404, "unknown room"},
		{"/v1/rooms/a%7Bb%7D/top", 400, "room id"},
		{"/v1/rooms/broken/top", 503, "read from Redis failed"},
	} {
		res, body := get(t, s, tc.path)
		var e struct {
			Type, Code, Title, Detail string
			Status                    int
		}
		decode(t, body, &e)
		if res.StatusCode != tc.code || res.Header.Get("Content-Type") != "application/problem+json" || !strings.Contains(e.Detail, tc.msg) ||
			e.Status != tc.code || e.Type != "urn:rostrum:problem:"+e.Code || e.Title == "" {
			t.Errorf("%s: %d %q %s, want %d with an error naming %q", tc.path, res.StatusCode, res.Header.Get("Content-Type"), body, tc.code, tc.msg)
		}
	}
	// A Redis error's text is logged, never sent.
	if _, body := get(t, s, "/v1/rooms/broken/top"); strings.Contains(body, "refused") {
		t.Errorf("the answer carries the Redis error's text: %s", body)
	}
	// An empty room has empty lists, not null ones.
	_, body := get(t, s, "/v1/rooms/quiet/top")
	if !strings.Contains(body, `"stable":[]`) || !strings.Contains(body, `"raw":[]`) {
		t.Fatalf("empty room: %s", body)
	}
}

// classified is a Ready error naming its class.
type classified struct {
	class string
	err   error
}

func (c classified) Error() string      { return c.err.Error() }
func (c classified) ReadyClass() string { return c.class }

var _ web.ReadyClass = classified{}

func TestHealthReadyMetrics(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "rostrum_records_total 42\n")
	})
	var ready error
	s := web.New(web.Config{Source: meetingSource(), Metrics: metrics,
		Ready: func(ctx context.Context) error { return ready }})

	if res, body := get(t, s, "/healthz"); res.StatusCode != 200 || body != "ok" {
		t.Errorf("/healthz: %d %q", res.StatusCode, body)
	}
	// Not ready: the class of the reason, never the error's text (it names
	// addresses and carries Redis's and Kafka's own words).
	for _, c := range []struct {
		err   error
		class string
	}{
		{classified{"redis", errors.New("sink: redis ping: dial tcp 127.0.0.1:6390: connect: connection refused")}, "redis"},
		{fmt.Errorf("wrapped: %w", classified{"group", errors.New("consumer group not joined (yet)")}), "group"},
		{errors.New("kafka: dial tcp 10.1.2.3:9092: i/o timeout"), "unknown"},
	} {
		ready = c.err
		res, body := get(t, s, "/readyz")
		var p struct{ Code, Detail, Reason string }
		decode(t, body, &p)
		if res.StatusCode != 503 || res.Header.Get("Content-Type") != "application/problem+json" ||
			p.Code != "unavailable" || p.Reason != c.class {
			t.Errorf("/readyz for %v: %d %q %s, want 503 unavailable reason %s", c.err, res.StatusCode, res.Header.Get("Content-Type"), body, c.class)
		}
		if strings.Contains(body, "dial") || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "10.1.2.3") || strings.Contains(body, "joined") {
			t.Errorf("/readyz sent the error's text: %s", body)
		}
	}
	ready = nil
	if res, body := get(t, s, "/readyz"); res.StatusCode != 200 || body != "ok" {
		t.Errorf("/readyz ready: %d %q", res.StatusCode, body)
	}
	if res, body := get(t, s, "/metrics"); res.StatusCode != 200 || body != "rostrum_records_total 42\n" {
		t.Errorf("/metrics: %d %q", res.StatusCode, body)
	}

	bare := web.New(web.Config{Source: meetingSource()})
	if res, body := get(t, bare, "/readyz"); res.StatusCode != 200 || body != "ok" {
		t.Errorf("/readyz without a check: %d %q", res.StatusCode, body)
	}
	if res, _ := get(t, bare, "/metrics"); res.StatusCode != 404 {
		t.Errorf("/metrics without a handler: %d, want 404", res.StatusCode)
	}
}

func TestPageAndStatic(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource()})
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html", `id="stable"`},
		{"/static/app.js", "javascript", "EventSource"},
		{"/static/style.css", "text/css", ".tile"},
	} {
		res, body := get(t, s, tc.path)
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(body, tc.contains) {
			t.Errorf("%s: %d %q, want %s containing %q", tc.path, res.StatusCode, res.Header.Get("Content-Type"), tc.ctype, tc.contains)
		}
	}
	if res, _ := get(t, s, "/nothing-here"); res.StatusCode != 404 {
		t.Errorf("/nothing-here: %d, want 404", res.StatusCode)
	}
}

// TestV1Rooms pages through the rooms with limit and offset, searches them
// with q, refuses a bad limit, and lists no rooms as an empty list.
func TestV1Rooms(t *testing.T) {
	s := web.New(web.Config{Source: meetingSource()})
	type page struct {
		Rooms []struct {
			RoomID       string `json:"room_id"`
			TotalMembers int64  `json:"total_members"`
		} `json:"rooms"`
		NextOffset *int `json:"next_offset"`
	}
	var got []string
	path := "/v1/rooms?limit=2"
	for path != "" {
		res, body := get(t, s, path)
		if res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, res.StatusCode, body)
		}
		var p page
		decode(t, body, &p)
		for _, r := range p.Rooms {
			got = append(got, r.RoomID)
		}
		path = ""
		if p.NextOffset != nil {
			path = "/v1/rooms?limit=2&offset=" + strconv.Itoa(*p.NextOffset)
		}
	}
	var want []string
	for _, r := range meetingRooms() {
		want = append(want, r.Room)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	var p page
	_, body := get(t, s, "/v1/rooms?q=tutor")
	decode(t, body, &p)
	if len(p.Rooms) != 1 || p.Rooms[0].RoomID != "prod-tutoring-88" || p.Rooms[0].TotalMembers != 9 || p.NextOffset != nil {
		t.Fatalf("search: %s", body)
	}
	if res, body := get(t, s, "/v1/rooms?limit=0"); res.StatusCode != 400 || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("limit=0: %d %s", res.StatusCode, body)
	}
	s = web.New(web.Config{Source: &fakeSource{}})
	if _, body := get(t, s, "/v1/rooms"); !strings.Contains(body, `"rooms":[]`) {
		t.Fatalf("no rooms: %s, want an empty list", body)
	}
}
