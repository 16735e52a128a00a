package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/auth"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/web"
)

// kafkaProducer produces to a kfake topic and waits for the ack.
type kafkaProducer struct {
	cl    *kgo.Client
	topic string
}

func (p kafkaProducer) ProduceCallback(ctx context.Context, key, value []byte) error {
	return p.cl.ProduceSync(ctx, &kgo.Record{Topic: p.topic, Key: key, Value: value}).FirstErr()
}

func post(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	return postAs(t, h, path, token, "application/json")
}

// postAs POSTs to path with token and Content-Type ctype ("": none).
func postAs(t *testing.T, h http.Handler, path, token, ctype string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, nil)
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestBoardRemoveRoute: the remove route answers 403 without an admin token
// file, 401 without a valid token, 404/400 for an unknown board or a bad
// member or settled, 503 without a producer, and 202 with the id of the
// event it produced: a remove event the decoder accepts, keyed by its
// room_id (the board's name on a user board, the member on a room board).
func TestBoardRemoveRoute(t *testing.T) {
	st, _ := boardStore(t)
	const topic = "test.callbacks.client"
	k := testenv.StartKafka(t, testenv.WithTopics(1, topic))
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# admins\nadm-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}

	closed := web.New(web.Config{Source: meetingSource(), Boards: st})
	if code, body := post(t, closed, "/v1/boards/weekly-score/members/u-1/remove", "adm-token"); code != 403 || !strings.Contains(body, "--admin-token-file") {
		t.Fatalf("no token file: %d %s", code, body)
	}
	noProducer := web.New(web.Config{Source: meetingSource(), Boards: st, AdminTokens: tokens})
	if code, body := post(t, noProducer, "/v1/boards/weekly-score/members/u-1/remove", "adm-token"); code != 503 {
		t.Fatalf("no producer: %d %s", code, body)
	}

	h := web.New(web.Config{Source: meetingSource(), Boards: st, AdminTokens: tokens,
		Producer: kafkaProducer{k.Client(), topic}})
	for _, c := range []struct {
		path, token string
		code        int
		has         string
	}{
		{"/v1/boards/weekly-score/members/u-1/remove", "", 401, "bearer token"},
		{"/v1/boards/weekly-score/members/u-1/remove", "wrong", 401, "bearer token"},
		{"/v1/boards/nope/members/u-1/remove", "adm-token", 404, "unknown board"},
		{"/v1/boards/weekly-score/members/u%20x/remove", "adm-token", 400, "member"},
		{"/v1/boards/weekly-score/members/u-1/remove?settled=yes", "adm-token", 400, "settled"},
	} {
		if code, body := post(t, h, c.path, c.token); code != c.code || !strings.Contains(body, c.has) {
			t.Fatalf("%s (token %q): %d %s, want %d with %q", c.path, c.token, code, body, c.code, c.has)
		}
	}
	if n := len(k.ReadAll(topic)); n != 0 {
		t.Fatalf("refused requests produced %d records", n)
	}

	var ids []string
	for _, p := range []string{"/v1/boards/weekly-score/members/u-1/remove?settled=true", "/v1/boards/item-trades/members/item-2/remove"} {
		code, body := post(t, h, p, "adm-token")
		var out struct{ ID string }
		if code != 202 || json.Unmarshal([]byte(body), &out) != nil || !strings.HasPrefix(out.ID, "rm-") {
			t.Fatalf("%s: %d %s", p, code, body)
		}
		ids = append(ids, out.ID)
	}
	recs := k.ReadAll(topic)
	if len(recs) != 2 {
		t.Fatalf("%d records produced, want 2", len(recs))
	}
	dec := codec.NewDecoder(codec.DecodeConfig{}.WithDefaults())
	for i, want := range []struct{ key, board, room, user string }{
		{"weekly-score", "weekly-score", "weekly-score", "u-1"}, {"item-2", "item-trades", "item-2", "item-trades"}} {
		r := recs[i]
		evs, err := dec.Decode(nil, r.Value, codec.SourceClient, r.Timestamp)
		if err != nil || len(evs) != 1 {
			t.Fatalf("record %s: %v", r.Value, err)
		}
		ev := evs[0]
		if string(r.Key) != want.key || ev.Type != codec.TypeRemove || ev.Board != want.board || ev.RoomID != want.room || ev.UserID != want.user ||
			ev.ID != ids[i] || ev.Settled != (i == 0) {
			t.Fatalf("record %d: key %q %+v, want key %q room %q user %q id %s", i, r.Key, ev, want.key, want.room, want.user, ids[i])
		}
	}
}

// failingProducer fails every produce with an error naming a broker.
type failingProducer struct{}

func (failingProducer) ProduceCallback(ctx context.Context, key, value []byte) error {
	return errors.New("kafka: dial tcp 10.9.8.7:9092: connect: connection refused")
}

// TestBoardRemoveProblems: each refusal of the remove route is a problem
// with its own code: 403 forbidden, 401 unauthorized, 415 without the JSON
// content type (a form posted by another site), 400 for a member id that
// cannot be one (not echoed), and 503 unavailable without the broker's
// error text.
func TestBoardRemoveProblems(t *testing.T) {
	st, _ := boardStore(t)
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("adm-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	closed := web.New(web.Config{Source: meetingSource(), Boards: st})
	h := web.New(web.Config{Source: meetingSource(), Boards: st, AdminTokens: tokens, Producer: failingProducer{}})
	const route = "/v1/boards/weekly-score/members/u-1/remove"
	long := "/v1/boards/weekly-score/members/" + strings.Repeat("x", 5000) + "/remove"
	for _, c := range []struct {
		what        string
		h           http.Handler
		path, token string
		ctype       string
		status      int
		code        string
	}{
		{"no token file", closed, route, "adm-token", "application/json", 403, "forbidden"},
		{"no token", h, route, "", "application/json", 401, "unauthorized"},
		{"a wrong token", h, route, "wrong", "application/json", 401, "unauthorized"},
		{"no content type", h, route, "adm-token", "", 415, "unsupported-media-type"},
		{"a form", h, route, "adm-token", "application/x-www-form-urlencoded", 415, "unsupported-media-type"},
		{"a 5000-byte member", h, long, "adm-token", "application/json", 400, "bad-request"},
		{"the broker fails", h, route, "adm-token", "application/json; charset=utf-8", 503, "unavailable"},
	} {
		status, body := postAs(t, c.h, c.path, c.token, c.ctype)
		var p struct{ Code string }
		_ = json.Unmarshal([]byte(body), &p)
		if status != c.status || p.Code != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.what, status, body, c.status, c.code)
		}
		if strings.Contains(body, "10.9.8.7") || strings.Contains(body, "refused") || strings.Contains(body, "xxxxxxxxxx") || len(body) > 1000 {
			t.Errorf("%s: the answer echoes what it should not: %s", c.what, body)
		}
	}
}
