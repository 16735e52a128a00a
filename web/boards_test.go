package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/web"
)

// boardServer serves a weekly first-reached board and a windows board from
// a real Store on a real redis-server, with a few events applied.
func boardServer(t testing.TB) (http.Handler, time.Time) {
	t.Helper()
	st, now := boardStore(t)
	return web.New(web.Config{Source: meetingSource(), Boards: st}), now
}

// boardStore is boardServer's Store.
func boardStore(t testing.TB) (*board.Store, time.Time) {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached"},
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	rdb := testenv.StartRedis(t).Client()
	st := board.NewStore(rdb, "test", bs)
	now := time.Now()
	st.SetClock(func() time.Time { return now })
	b := st.NewBatch()
	ts := now.Add(-time.Minute).UnixMilli()
	evs := []codec.Event{
		{RoomID: "r", UserID: "u-1", Type: codec.TypeScore, Value: 10, TS: ts},
		{RoomID: "r", UserID: "u-2", Type: codec.TypeScore, Value: 10, TS: ts + 5}, // same total, later: ranks below u-1
		{RoomID: "r", UserID: "u-3", Type: codec.TypeScore, Value: 30, TS: ts},
		{RoomID: "item-1", UserID: "u", Type: codec.TypeTrade, Value: 500, TS: ts},
		{RoomID: "item-2", UserID: "u", Type: codec.TypeTrade, Value: 700, TS: ts},
	}
	if err := b.Add("t", 0, 0, now, evs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return st, now
}

func TestBoardRoutes(t *testing.T) {
	h, now := boardServer(t)
	week := mustBoard(t, "week").Period(now).Label

	resp, body := get(t, h, "/v1/boards")
	var list []map[string]any
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &list) != nil || len(list) != 2 || list[0]["period"] != week {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}

	resp, body = get(t, h, "/v1/boards/weekly-score/top?n=10")
	want := `{"board":"weekly-score","period":"` + week + `","window":"","total_members":3,"members":[` +
		`{"member":"u-3","rank":1,"total":30,"reached_at":` + itoa(now.Add(-time.Minute).UnixMilli()) + `},` +
		`{"member":"u-1","rank":2,"total":10,"reached_at":` + itoa(now.Add(-time.Minute).UnixMilli()) + `},` +
		`{"member":"u-2","rank":3,"total":10,"reached_at":` + itoa(now.Add(-time.Minute).UnixMilli()+5) + `}]}` + "\n"
	if resp.StatusCode != 200 || body != want {
		t.Fatalf("top: %d\n got %s\nwant %s", resp.StatusCode, body, want)
	}

	for _, c := range []struct {
		path string
		code int
		has  string
	}{
		{"/v1/boards/weekly-score/top?n=1&offset=1", 200, `"member":"u-1","rank":2`},
		{"/v1/boards/weekly-score/top?period=" + week, 200, `"total_members":3`},
		{"/v1/boards/weekly-score/members/u-2", 200, `{"member":"u-2","rank":3,"total":10`},
		{"/v1/boards/weekly-score/members/u-2/around?n=1", 200, `"members":[{"member":"u-1","rank":2`},
		{"/v1/boards/item-trades/top", 200, `"window":"3m","total_members":2,"members":[{"member":"item-2","rank":1,"total":700`},
		{"/v1/boards/item-trades/top?window=1h", 200, `"window":"1h"`},
		{"/v1/boards/item-trades/members/item-1?window=1h", 200, `"rank":2,"total":500`},
		{"/v1/boards/nope/top", 404, `unknown board`},
		{"/v1/boards/weekly-score/members/nobody", 404, `unknown member`},
		{"/v1/boards/weekly-score/members/nobody/around", 404, `unknown member`},
		{"/v1/boards/weekly-score/top?period=2020-W01", 404, `unknown period`},
		{"/v1/boards/weekly-score/top?period=2099-W01", 404, `unknown period`},
		{"/v1/boards/weekly-score/top?period=2026-11", 400, `not a week label`},
		{"/v1/boards/item-trades/top?window=5m", 404, `unknown window`},
		{"/v1/boards/item-trades/top?period=2026-W01", 400, `no periods`},
		{"/v1/boards/weekly-score/top?n=0", 400, `n 0`},
		{"/v1/boards/weekly-score/top?n=x", 400, `n must be an integer`},
		{"/v1/boards/weekly-score/top?offset=-1", 400, `offset`},
	} {
		resp, body := get(t, h, c.path)
		want := "application/json"
		if c.code != 200 {
			want = "application/problem+json"
		}
		if resp.StatusCode != c.code || !strings.Contains(body, c.has) || resp.Header.Get("Content-Type") != want {
			t.Errorf("%s: %d %s, want %d with %s", c.path, resp.StatusCode, body, c.code, c.has)
		}
		if c.code != 200 && !strings.Contains(body, fmt.Sprintf(`"status":%d,`, c.code)) {
			t.Errorf("%s: error body %s", c.path, body)
		}
	}
}

func TestBoardRoutesWithoutBoards(t *testing.T) {
	h := web.New(web.Config{Source: meetingSource()})
	if resp, body := get(t, h, "/v1/boards"); resp.StatusCode != 200 || body != "[]\n" {
		t.Errorf("list: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, h, "/v1/boards/x/top"); resp.StatusCode != 404 {
		t.Errorf("top: %d", resp.StatusCode)
	}
}

func mustBoard(t *testing.T, unit string) *boarddef.Board {
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "x", Events: []string{"score"}, Member: "user_id", Kind: "periodic",
		Period: unit, TZ: "Asia/Shanghai"}})
	if err != nil {
		t.Fatal(err)
	}
	return bs[0]
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestBoardSettledRoute settles a day board's yesterday and reads it back.
func TestBoardSettledRoute(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "daily", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "day", SettleTop: 2},
		{Name: "items", Events: []string{"trade"}, Member: "room_id", Kind: "rolling", Slice: time.Minute, Slices: 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	// Noon of today: just after midnight yesterday has not closed yet (its
	// grace runs), and the latest settled period would be the day before.
	now := bs[0].Period(time.Now()).Start.Add(12 * time.Hour)
	yesterday := bs[0].Period(bs[0].Period(now).Start.Add(-time.Hour))
	b := st.NewBatch()
	at := yesterday.Start.Add(time.Hour)
	if err := b.Add("t", 0, 0, at, []codec.Event{
		{RoomID: "a", Type: codec.TypeGift, Value: 5, TS: at.UnixMilli()},
		{RoomID: "b", Type: codec.TypeGift, Value: 7, TS: at.UnixMilli()},
		{RoomID: "c", Type: codec.TypeGift, Value: 1, TS: at.UnixMilli()},
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := st.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Config{Source: meetingSource(), Boards: st})
	if resp, body := get(t, h, "/v1/boards/daily/settled"); resp.StatusCode != 404 || !strings.Contains(body, "no settled period yet") {
		t.Fatalf("before: %d %s", resp.StatusCode, body)
	}
	if _, err := st.Settle(ctx, now); err != nil {
		t.Fatal(err)
	}
	closed := itoa(yesterday.End.Add(boarddef.DefaultGrace).UnixMilli())
	want := `{"board":"daily","period":"` + yesterday.Label + `","closed_at":` + closed + `,"total_members":3,"members":[` +
		`{"member":"b","rank":1,"total":7,"reached_at":` + itoa(at.UnixMilli()) + `},` +
		`{"member":"a","rank":2,"total":5,"reached_at":` + itoa(at.UnixMilli()) + `}],"periods":["` + yesterday.Label + `"]}` + "\n"
	for _, path := range []string{"/v1/boards/daily/settled", "/v1/boards/daily/settled?period=" + yesterday.Label} {
		if resp, body := get(t, h, path); resp.StatusCode != 200 || body != want {
			t.Fatalf("%s: %d\n got %s\nwant %s", path, resp.StatusCode, body, want)
		}
	}
	for _, c := range []struct {
		path string
		code int
		has  string
	}{
		{"/v1/boards/daily/settled?n=1&offset=1", 200, `"members":[{"member":"a","rank":2`},
		{"/v1/boards/daily/settled?period=2020-01-01", 404, `not settled`},
		{"/v1/boards/daily/settled?period=2020-01", 400, `not a day label`},
		{"/v1/boards/items/settled", 400, `does not settle`},
		{"/v1/boards/nope/settled", 404, `unknown board`},
	} {
		if resp, body := get(t, h, c.path); resp.StatusCode != c.code || !strings.Contains(body, c.has) {
			t.Errorf("%s: %d %s, want %d with %s", c.path, resp.StatusCode, body, c.code, c.has)
		}
	}
}

// TestBoardListTotal: a total board never resets (next_reset 0) and a decay
// board names its half-life; its top reads the decayed value.
func TestBoardListTotal(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hot", Events: []string{"gift"}, Member: "room_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "7d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	now := time.Now()
	st.SetClock(func() time.Time { return now })
	b := st.NewBatch()
	if err := b.Add("t", 0, 0, now, []codec.Event{{RoomID: "r", UserID: "u", Type: codec.TypeGift, Value: 520, TS: now.UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Config{Source: meetingSource(), Boards: st})
	resp, body := get(t, h, "/v1/boards")
	if resp.StatusCode != 200 || !strings.Contains(body, `"kind":"total","period":"","next_reset":0,`) || !strings.Contains(body, `"half_life":"7d"`) {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, h, "/v1/boards/hot/top")
	if resp.StatusCode != 200 || !strings.Contains(body, `"members":[{"member":"r","rank":1,"total":520,`) {
		t.Fatalf("top: %d %s", resp.StatusCode, body)
	}
	if resp, body = get(t, h, "/v1/boards/hot/top?period=2026-W01"); resp.StatusCode != 400 {
		t.Fatalf("top of a period of a total board: %d %s", resp.StatusCode, body)
	}
}

// TestBoardListRollingDecay: a rolling decay board names its window and
// its half-life; its top reads the decayed value at the store's clock.
func TestBoardListRollingDecay(t *testing.T) {
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "trend", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: 15 * time.Minute, Slices: 96,
			Decay: &boarddef.Decay{HalfLife: "6h"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(testenv.StartRedis(t).Client(), "test", bs)
	now := time.Now()
	st.SetClock(func() time.Time { return now })
	b := st.NewBatch()
	if err := b.Add("t", 0, 0, now, []codec.Event{{RoomID: "r", UserID: "u", Type: codec.TypeGift, Value: 520, TS: now.Add(-6 * time.Hour).UnixMilli()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Apply(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Config{Source: meetingSource(), Boards: st})
	resp, body := get(t, h, "/v1/boards")
	if resp.StatusCode != 200 || !strings.Contains(body, `"kind":"rolling"`) || !strings.Contains(body, `"half_life":"6h"`) {
		t.Fatalf("list: %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, h, "/v1/boards/trend/top")
	if resp.StatusCode != 200 || !strings.Contains(body, `"window":"24h"`) || !strings.Contains(body, `"members":[{"member":"r","rank":1,"total":260,`) {
		t.Fatalf("top: %d %s (a gift of 520 six hours ago is worth 260)", resp.StatusCode, body)
	}
}
