package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/web"
)

// boardsRun starts `rostrum run` with the boards of cfg (and more flags)
// against k and r, and returns its HTTP base URL; it stops at cleanup.
func boardsRun(t *testing.T, k *testenv.Kafka, r *testenv.Redis, cfg string, more ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rostrum.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, append([]string{"run", "--config", path, "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test",
			"--wal-dir", t.TempDir(), "--http", addr, "--log-level", "error"}, more...), io.Discard, io.Discard)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run did not stop cleanly: %v", err)
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("rostrum run not ready within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// boardMembers reads a board's top 10 as "member total" pairs.
func boardMembers(t *testing.T, base, name string) []string {
	t.Helper()
	resp, err := http.Get(base + "/v1/boards/" + name + "/top")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Members []struct {
			Member string
			Total  json.Number
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Members {
		out = append(out, m.Member+" "+m.Total.String())
	}
	return out
}

// waitMembers waits until a board's top reads want.
func waitMembers(t *testing.T, base, name, want string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		got := fmt.Sprint(boardMembers(t, base, name))
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("board %s: %s, want %s", name, got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func postRemove(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json") // every write of the API needs it
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBoardRemoveEndToEnd: through `rostrum run`, kfake and a real
// redis-server, POST …/members/{m}/remove with a token of
// --admin-token-file produces a remove event the processor applies: the
// member leaves the user board (keyed by the board's name) and the room
// board (keyed by the room); without a valid token the route answers 401,
// and a run without --admin-token-file answers 403.
func TestBoardRemoveEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", "test")
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	r := testenv.StartRedis(t)
	const cfg = "boards:\n" +
		"  - {name: gifts, events: [gift], member: user_id, kind: periodic, period: day, settle: false}\n" +
		"  - {name: room-gifts, events: [gift], member: room_id, kind: rolling, slice: 1h, slices: 24}\n"
	tokens := filepath.Join(t.TempDir(), "admin-tokens")
	if err := os.WriteFile(tokens, []byte("adm-1-0123456789ab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := boardsRun(t, k, r, cfg, "--admin-token-file", tokens)

	ts := time.Now().Add(-time.Second).UnixMilli()
	for i, g := range []struct {
		room, user string
		value      int
	}{{"r-1", "u-1", 30}, {"r-1", "u-2", 20}, {"r-2", "u-3", 10}} {
		k.Produce(topics.RTC, []byte(g.room), []byte(fmt.Sprintf(`{"type":"gift","room_id":%q,"user_id":%q,"value":%d,"ts":%d}`, g.room, g.user, g.value, ts+int64(i))))
	}
	waitMembers(t, base, "gifts", "[u-1 30 u-2 20 u-3 10]")
	waitMembers(t, base, "room-gifts", "[r-1 50 r-2 10]")

	for _, token := range []string{"", "adm-2"} {
		if code, body := postRemove(t, base+"/v1/boards/gifts/members/u-1/remove", token); code != 401 {
			t.Fatalf("token %q: %d %s, want 401", token, code, body)
		}
	}
	for _, p := range []string{"/v1/boards/gifts/members/u-1/remove", "/v1/boards/room-gifts/members/r-1/remove"} {
		if code, body := postRemove(t, base+p, "adm-1-0123456789ab"); code != 202 || !strings.Contains(body, `"id":"rm-`) {
			t.Fatalf("%s: %d %s, want 202 with the id", p, code, body)
		}
	}
	waitMembers(t, base, "gifts", "[u-2 20 u-3 10]")
	waitMembers(t, base, "room-gifts", "[r-2 10]")
	recs := k.ReadAll(topics.Client)
	if len(recs) != 2 || string(recs[0].Key) != "gifts" || string(recs[1].Key) != "r-1" {
		t.Fatalf("client topic: %d records, want 2 keyed gifts and r-1", len(recs))
	}

	closed := boardsRun(t, k, testenv.StartRedis(t), cfg)
	if code, body := postRemove(t, closed+"/v1/boards/gifts/members/u-2/remove", "adm-1-0123456789ab"); code != 403 {
		t.Fatalf("without --admin-token-file: %d %s, want 403", code, body)
	}
}

// TestBoardRemoveUnacknowledged: when no broker acknowledges the remove
// event within --admin-produce-timeout, the route answers 503 (a real
// client, pointed at a port nothing listens on).
func TestBoardRemoveUnacknowledged(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "gifts", Events: []string{"gift"}, Member: "user_id", Kind: "total"}})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	tokens := filepath.Join(t.TempDir(), "admin-tokens")
	if err := os.WriteFile(tokens, []byte("adm-1-0123456789ab\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := boardAdminFlags{tokenFile: tokens, produceTimeout: time.Second}
	at, err := f.tokens()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newCallbackProducer([]string{fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))}, nil, "test.callbacks.client", f.produceTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	srv := httptest.NewServer(web.New(web.Config{Source: emptySource{}, Boards: st, AdminTokens: at, Producer: pr}))
	defer srv.Close()
	if code, body := postRemove(t, srv.URL+"/v1/boards/gifts/members/u-1/remove", "adm-1-0123456789ab"); code != 503 || !strings.Contains(body, "did not acknowledge") {
		t.Fatalf("%d %s, want 503", code, body)
	}
}

// emptySource is a web.Source without rooms.
type emptySource struct{}

func (emptySource) Rooms(context.Context, int) ([]ranking.RoomSummary, error) { return nil, nil }
func (emptySource) RoomView(context.Context, string) (ranking.RoomView, error) {
	return ranking.RoomView{}, ranking.ErrUnknownRoom
}
