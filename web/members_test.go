package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/browser"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/web"
)

// memberFixture is a server over real boards in Redis and the model of the
// same events.
type memberFixture struct {
	h     http.Handler
	bs    []*boarddef.Board
	m     *boardmodel.Model
	chain *hints.Chain
	now   time.Time
}

// memberRules are seed 001's hints.
var memberRules = []hints.Rule{
	{Name: "unread", When: "weekly_received >= 10 && weekly_read < weekly_received / 2",
		Text: "You have {{.weekly_received}} new requests and read {{.weekly_read}}."},
	{Name: "top-three", When: "rank_weekly_score > 0 && rank_weekly_score <= 3",
		Text: "You are #{{.rank_weekly_score}} this week with {{.weekly_score}} points.", Stop: true},
	{Name: "passed", When: "weekly_passed > 0", Text: "{{.weekly_passed}} passed this week."},
}

// newMemberFixture compiles seed 001's weekly boards (the score in tenths),
// seed 002's item windows (room ids) and a user windows board, a decay
// board, and the hints; applies random events for users u0…u7 and items
// i0…i3, and fixed ones for alice (12 received, 5 read, 3 passed, the week's
// best score), through a Store on rdb and into the model.
func newMemberFixture(t *testing.T, rdb redis.UniversalClient) *memberFixture {
	t.Helper()
	week := func(name, ev string) boarddef.Config {
		return boarddef.Config{Name: name, Events: []string{ev}, Member: "user_id", Value: "one", Kind: "periodic",
			Period: "week", TZ: "Asia/Shanghai"}
	}
	windows := boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour, 6*time.Hour, 24*time.Hour)
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached", Scale: 10},
		week("weekly-received", "received"),
		week("weekly-read", "read"),
		week("weekly-passed", "passed"),
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute, Windows: windows},
		{Name: "user-trades", Events: []string{"trade"}, Member: "user_id", Kind: "windows", Slice: time.Minute, Windows: windows},
		{Name: "hot-week", Events: []string{"gift"}, Member: "user_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "7d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	chain, err := hints.Compile(memberRules, bs)
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rdb, "test", bs)
	if err := st.Adopt(context.Background(), "g1"); err != nil {
		t.Fatal(err)
	}
	f := &memberFixture{bs: bs, m: boardmodel.New(bs), chain: chain,
		now: time.Date(2027, 4, 14, 9, 30, 0, 0, time.UTC)}
	st.SetClock(func() time.Time { return f.now })
	rng := rand.New(rand.NewPCG(7, 7))
	var offset int64
	apply := func(evs []codec.Event) {
		b := st.NewBatch()
		if err := b.Add("t", 0, offset, f.now, evs); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Apply(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		f.m.Rebase(f.now)
		f.m.Record("t", 0, offset, f.now, evs)
		offset++
	}
	types := []codec.Type{codec.TypeScore, codec.TypeReceived, codec.TypeRead, codec.TypePassed, codec.TypeTrade, codec.TypeGift}
	for range 60 {
		var evs []codec.Event
		for range 5 {
			ev := codec.Event{RoomID: fmt.Sprintf("i%d", rng.IntN(4)), UserID: fmt.Sprintf("u%d", rng.IntN(8)),
				Type: types[rng.IntN(len(types))], TS: f.now.Add(-time.Duration(rng.Int64N(int64(5 * time.Hour)))).UnixMilli()}
			switch ev.Type {
			case codec.TypeScore:
				ev.Value, ev.Decimals = 1+rng.Int64N(99), 1
			case codec.TypeTrade, codec.TypeGift:
				ev.Value = 1 + rng.Int64N(500)
			}
			evs = append(evs, ev)
		}
		apply(evs)
	}
	var alice []codec.Event
	at := f.now.Add(-time.Minute).UnixMilli()
	for i := range 12 {
		alice = append(alice, codec.Event{RoomID: "r", UserID: "alice", Type: codec.TypeReceived, TS: at})
		if i < 5 {
			alice = append(alice, codec.Event{RoomID: "r", UserID: "alice", Type: codec.TypeRead, TS: at})
		}
		if i < 3 {
			alice = append(alice, codec.Event{RoomID: "r", UserID: "alice", Type: codec.TypePassed, TS: at})
		}
	}
	alice = append(alice, codec.Event{RoomID: "r", UserID: "alice", Type: codec.TypeScore, Value: 100005, Decimals: 1, TS: at})
	apply(alice)
	// The windows subtract what left them: 3m, 10m and 1h hold less than 24h.
	if _, err := st.Expire(context.Background(), f.now); err != nil {
		t.Fatal(err)
	}
	f.m.Expire(f.now)
	f.h = web.New(web.Config{Source: meetingSource(), Boards: st, Hints: chain})
	return f
}

// standing is the model's standing of member on board bi, window j.
func (f *memberFixture) standing(bi, j int, member string) (boardmodel.Entry, string) {
	b := f.bs[bi]
	var ranking []boardmodel.Entry
	period := ""
	switch b.Kind() {
	case boarddef.Periodic:
		period = b.Period(f.now).Label
		ranking = f.m.Ranking(bi, period, 0)
	case boarddef.Total:
		ranking = f.m.TotalRanking(bi, f.now)
	default:
		ranking = f.m.Ranking(bi, "", j)
	}
	for _, e := range ranking {
		if e.Member == member {
			return e, period
		}
	}
	return boardmodel.Entry{Member: member}, period
}

func (f *memberFixture) index(name string) int {
	for i, b := range f.bs {
		if b.Name() == name {
			return i
		}
	}
	panic(name)
}

// wantMember is the answer the model gives for GET /v1/members/{member}
// on boards, as JSON.
func (f *memberFixture) wantMember(member string, boards []string) string {
	out := map[string]any{}
	num := func(b *boarddef.Board, units int64) json.Number { return json.Number(b.FormatUnits(units)) }
	for _, name := range boards {
		bi := f.index(name)
		b := f.bs[bi]
		if ws := b.Windows(); len(ws) > 0 {
			win := map[string]any{}
			for j, w := range ws {
				e, _ := f.standing(bi, j, member)
				win[w] = map[string]any{"rank": e.Rank, "total": num(b, e.Total), "reached_at": e.ReachedAt}
			}
			out[name] = map[string]any{"windows": win}
			continue
		}
		e, period := f.standing(bi, 0, member)
		v := map[string]any{"rank": e.Rank, "total": num(b, e.Total), "reached_at": e.ReachedAt}
		if period != "" {
			v["period"] = period
		}
		out[name] = v
	}
	b, _ := json.Marshal(map[string]any{"member": member, "boards": out})
	return string(b)
}

// modelStandings is the model's standings of member on the chain's boards.
func (f *memberFixture) modelStandings(member string) board.MemberStandings {
	ms := board.MemberStandings{Member: member}
	for _, name := range f.chain.Boards() {
		bi := f.index(name)
		bs := board.Standings{Board: name}
		ws := f.bs[bi].Windows()
		if len(ws) == 0 {
			ws = []string{""}
		}
		for j, w := range ws {
			e, period := f.standing(bi, j, member)
			bs.Period = period
			bs.Standings = append(bs.Standings, board.Standing{Window: w, Rank: e.Rank, Total: e.Total, ReachedAt: e.ReachedAt})
		}
		ms.Boards = append(ms.Boards, bs)
	}
	return ms
}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%v in %s", err, a)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return reflect.DeepEqual(x, y)
}

// checkMemberRoutes reads every member through the three routes and
// compares each answer with the model's numbers.
func checkMemberRoutes(t *testing.T, f *memberFixture) {
	t.Helper()
	userBoards := []string{"weekly-score", "weekly-received", "weekly-read", "weekly-passed", "user-trades", "hot-week"}
	members := []string{"alice", "nobody"}
	for u := range 8 {
		members = append(members, fmt.Sprintf("u%d", u))
	}
	ranked := 0
	for _, m := range members {
		for _, q := range []struct {
			query  string
			boards []string
		}{
			{"", userBoards},
			{"?boards=user-trades,weekly-score", []string{"user-trades", "weekly-score"}},
		} {
			resp, body := get(t, f.h, "/v1/members/"+m+q.query)
			if want := f.wantMember(m, q.boards); resp.StatusCode != 200 || !sameJSON(t, body, want) {
				t.Fatalf("%s%s: %d\n got %s\nwant %s", m, q.query, resp.StatusCode, body, want)
			}
			ranked += strings.Count(body, `"rank":`) - strings.Count(body, `"rank":0`)
		}
		// Hints: the chain over the model's numbers.
		hs, errs := f.chain.Eval(f.modelStandings(m))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		want := map[string]any{"member": m, "hints": []map[string]string{}}
		for _, h := range hs {
			want["hints"] = append(want["hints"].([]map[string]string), map[string]string{"name": h.Name, "text": h.Text})
		}
		wb, _ := json.Marshal(want)
		if resp, body := get(t, f.h, "/v1/members/"+m+"/hints"); resp.StatusCode != 200 || !sameJSON(t, body, string(wb)) {
			t.Fatalf("%s hints: %d\n got %s\nwant %s", m, resp.StatusCode, body, wb)
		}
	}
	if ranked < 20 {
		t.Fatalf("only %d ranked standings: the fixture ranks almost nobody", ranked)
	}
	// alice's numbers and hints, worked out by hand: 12 received, 5 read,
	// 3 passed, 10000.5 points (the week's best).
	resp, body := get(t, f.h, "/v1/members/alice?boards=weekly-received,weekly-read,weekly-score")
	for _, has := range []string{`"weekly-received":{"period":"2027-W15","rank":`, `"total":12,`, `"total":5,`, `"weekly-score":{"period":"2027-W15","rank":1,"total":10000.5,`} {
		if resp.StatusCode != 200 || !strings.Contains(body, has) {
			t.Fatalf("alice: %d %s, want %s", resp.StatusCode, body, has)
		}
	}
	want := `{"member":"alice","hints":[{"name":"unread","text":"You have 12 new requests and read 5."},` +
		`{"name":"top-three","text":"You are #1 this week with 10000.5 points."}]}` + "\n"
	if resp, body := get(t, f.h, "/v1/members/alice/hints"); resp.StatusCode != 200 || body != want {
		t.Fatalf("alice hints: %d\n got %s\nwant %s", resp.StatusCode, body, want)
	}

	// A page of friends on one board: ranked first in rank order, then the
	// others in the order asked.
	for _, c := range []struct {
		board, window string
		ids           []string
	}{
		{"weekly-received", "", []string{"nobody", "u3", "alice", "u1", "u0", "u2", "ghost", "u4", "u5", "u6", "u7"}},
		{"user-trades", "1h", []string{"u7", "u6", "nobody", "u5", "u4", "u3", "u2", "u1", "u0"}},
		{"item-trades", "", []string{"i0", "i1", "i2", "i3", "u1"}},
		{"item-trades", "24h", []string{"i3", "i2", "i1", "i0"}},
		{"hot-week", "", []string{"u2", "u1", "u0"}},
	} {
		bi := f.index(c.board)
		j, _ := f.bs[bi].Window(c.window)
		var ranked, unranked []map[string]any
		period := ""
		for _, id := range c.ids {
			e, p := f.standing(bi, j, id)
			period = p
			v := map[string]any{"member": id, "rank": e.Rank, "total": json.Number(f.bs[bi].FormatUnits(e.Total)), "reached_at": e.ReachedAt}
			if e.Rank > 0 {
				ranked = append(ranked, v)
			} else {
				unranked = append(unranked, v)
			}
		}
		slices.SortFunc(ranked, func(a, b map[string]any) int { return int(a["rank"].(int64) - b["rank"].(int64)) })
		window := ""
		if ws := f.bs[bi].Windows(); len(ws) > 0 {
			window = ws[j]
		}
		wb, _ := json.Marshal(map[string]any{"board": c.board, "period": period, "window": window,
			"members": append(append([]map[string]any{}, ranked...), unranked...)})
		path := "/v1/boards/" + c.board + "/members?ids=" + strings.Join(c.ids, ",")
		if c.window != "" {
			path += "&window=" + c.window
		}
		if resp, body := get(t, f.h, path); resp.StatusCode != 200 || !sameJSON(t, body, string(wb)) {
			t.Fatalf("%s: %d\n got %s\nwant %s", path, resp.StatusCode, body, wb)
		}
	}
}

// TestMemberRoutes reads members on a single redis-server against the
// model: every board of a member in one call, chosen boards, a page of
// friends, and hints.
func TestMemberRoutes(t *testing.T) {
	f := newMemberFixture(t, testenv.StartRedis(t).Client())
	checkMemberRoutes(t, f)
	// The answers with hints and rolling windows match docs/openapi.yaml.
	router, err := gorillamux.NewRouter(loadOpenAPI(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v1/members/alice", "/v1/members/alice/hints", "/v1/members/nobody/hints",
		"/v1/boards/user-trades/members?ids=u1,alice&window=6h"} {
		req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080"+p, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s: not in docs/openapi.yaml: %v", p, err)
		}
		rec := httptest.NewRecorder()
		f.h.ServeHTTP(rec, req)
		in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
			Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil || rec.Code != 200 {
			t.Errorf("%s: %d %s\ndoes not match docs/openapi.yaml: %v", p, rec.Code, rec.Body, err)
		}
	}
}

// TestMemberRoutesOnCluster: the same reads on a 3-master Redis Cluster,
// where the boards of one member read live on several masters.
func TestMemberRoutesOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	checkMemberRoutes(t, newMemberFixture(t, testenv.StartRedisCluster(t).Client()))
}

// TestMemberRouteErrors: the limits of ids= and boards=, unknown boards and
// windows, bad ids, and hints when none are configured, each a problem
// detail.
func TestMemberRouteErrors(t *testing.T) {
	h, _ := boardServer(t)
	many := make([]string, board.MaxMembers+1)
	for i := range many {
		many[i] = fmt.Sprintf("u-%d", i)
	}
	long := strings.Repeat("a", web.MaxListBytes+1)
	for _, c := range []struct {
		path string
		code int
		has  string
	}{
		{"/v1/boards/weekly-score/members?ids=" + strings.Join(many, ","), 400, "ids: 101 given, at most 100"},
		{"/v1/boards/weekly-score/members?ids=" + strings.Join(many[:100], ","), 200, `"members":[{"member":"u-3","rank":1`},
		{"/v1/boards/weekly-score/members?ids=" + long, 400, "ids: 12901 bytes, at most 12900"},
		{"/v1/boards/weekly-score/members", 400, "ids: at least one is required"},
		{"/v1/boards/weekly-score/members?ids=", 400, "ids: at least one is required"},
		{"/v1/boards/weekly-score/members?ids=u-1,,u-2", 400, "ids: an empty item"},
		{"/v1/boards/weekly-score/members?ids=u-1,u-1", 400, `ids: \"u-1\" is listed twice`},
		{"/v1/boards/weekly-score/members?ids=a%20b", 400, `ids: item 1: invalid character ' ' at byte 1`},
		{"/v1/boards/nope/members?ids=u-1", 404, "unknown board"},
		{"/v1/boards/item-trades/members?ids=item-1&window=5m", 404, "unknown window"},
		{"/v1/boards/weekly-score/members?ids=u-1&window=3m", 400, "board weekly-score is periodic and has no windows"},
		{"/v1/members/u-1?boards=nope", 404, "unknown board"},
		{"/v1/members/u-1?boards=", 400, "boards: at least one is required"},
		{"/v1/members/u-1?boards=weekly-score,weekly-score", 400, "is listed twice"},
		{"/v1/members/a%7Bb%7D", 400, "bad parameter"},
		{"/v1/members/" + strings.Repeat("x", 129), 400, "bad parameter"},
		{"/v1/members/u-1/hints", 404, "no hints are configured"},
		{"/v1/members/u-3?boards=item-trades,weekly-score", 200, `"weekly-score":{"period":`},
	} {
		resp, body := get(t, h, c.path)
		want := "application/json"
		if c.code != 200 {
			want = "application/problem+json"
		}
		if resp.StatusCode != c.code || !strings.Contains(body, c.has) || resp.Header.Get("Content-Type") != want {
			t.Errorf("%.80s: %d %.300s, want %d with %s", c.path, resp.StatusCode, body, c.code, c.has)
		}
	}
	// A member id that cannot be one is refused before any read, on the
	// board read routes as on the member routes, and not echoed back.
	huge := strings.Repeat("x", 5000)
	for _, p := range []string{"/v1/boards/weekly-score/members/" + huge, "/v1/boards/weekly-score/members/" + huge + "/around",
		"/v1/members/" + huge, "/v1/boards/weekly-score/members?ids=u-1," + huge,
		"/v1/boards/weekly-score/members/a%20b"} {
		resp, body := get(t, h, p)
		if resp.StatusCode != 400 || !strings.Contains(body, `"code":"bad-request"`) || len(body) > 1000 || strings.Contains(body, "xxxxxxxxxx") {
			t.Errorf("%.60s…: %d %.300s (%d bytes), want a short 400", p, resp.StatusCode, body, len(body))
		}
	}
	// Without boards every member route is 404.
	bare := web.New(web.Config{Source: meetingSource()})
	for _, p := range []string{"/v1/members/u-1", "/v1/members/u-1/hints", "/v1/boards/x/members?ids=u-1"} {
		if resp, _ := get(t, bare, p); resp.StatusCode != 404 {
			t.Errorf("%s without boards: %d", p, resp.StatusCode)
		}
	}
}

// TestBrowserMemberLookup opens the boards page at #member=alice in
// headless chromium: it must show alice's hints and one row per board (a
// row per window of a windows board) with the numbers of the API; a
// lookup typed in the form shows another member.
func TestBrowserMemberLookup(t *testing.T) {
	browser.ChromiumPath(t)
	f := newMemberFixture(t, testenv.StartRedis(t).Client())
	ts := httptest.NewServer(f.h)
	t.Cleanup(ts.Close)
	b := browser.Start(t, ts.URL+"/static/boards.html#member=alice", 1280, 900)
	b.WaitFor("alice's hints", `document.querySelectorAll('#member-hints li[data-hint]').length === 2 && document.querySelector('#member-table tbody').dataset.member === 'alice'`)
	var got struct {
		Hints []string
		Rows  []string
	}
	const read = `({hints: [...document.querySelectorAll('#member-hints li')].map(l => l.textContent),
		rows: [...document.querySelectorAll('#member-table tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))})`
	b.Eval(read, &got)
	want := []string{"You have 12 new requests and read 5.", "You are #1 this week with 10000.5 points."}
	if !slices.Equal(got.Hints, want) {
		t.Fatalf("hints %q, want %q", got.Hints, want)
	}
	// 4 weekly boards, 5 windows of user-trades, hot-week.
	week := f.bs[0].Period(f.now).Label
	// In the order of the board list, windows shortest first.
	if len(got.Rows) != 10 || got.Rows[0] != "weekly-score|"+week+"|1|10000.5" || !strings.HasPrefix(got.Rows[4], "user-trades|window 3m|") ||
		!strings.HasPrefix(got.Rows[8], "user-trades|window 24h|") ||
		!slices.Contains(got.Rows, "weekly-read|"+week+"|"+fmt.Sprint(mustStanding(f, "weekly-read", "alice").Rank)+"|5") ||
		!slices.Contains(got.Rows, "user-trades|window 3m|—|0") {
		t.Fatalf("rows %q", got.Rows)
	}
	b.Eval(`document.getElementById('member-id').value = 'u3', document.getElementById('lookup').requestSubmit(), true`, new(bool))
	b.WaitFor("u3", `document.querySelector('#member-table tbody').dataset.member === 'u3'`)
	e := mustStanding(f, "weekly-received", "u3")
	var rows []string
	b.Eval(`[...document.querySelectorAll('#member-table tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('|'))`, &rows)
	if wantRow := fmt.Sprintf("weekly-received|%s|%d|%d", week, e.Rank, e.Total); e.Rank == 0 || !slices.Contains(rows, wantRow) {
		t.Fatalf("u3 rows %q, want %s", rows, wantRow)
	}
}

// mustStanding is the model's standing of member on a periodic board.
func mustStanding(f *memberFixture, board, member string) boardmodel.Entry {
	e, _ := f.standing(f.index(board), 0, member)
	return e
}

// FuzzBoardMembersIDs sends any ids= to GET /v1/boards/{name}/members: the
// answer is 200 with one entry per id exactly when ids holds 1 to 100
// distinct valid ids, else a 400 problem; never another status.
func FuzzBoardMembersIDs(f *testing.F) {
	for _, s := range []string{"u-1", "u-1,u-2,nobody", "", ",", "u-1,", "u-1,u-1", "a b", "{x}", strings.Repeat("u,", 100) + "u",
		strings.Repeat("x", 129), "é", "u-1%2Cu-2"} {
		f.Add(s)
	}
	h, _ := boardServer(f)
	f.Fuzz(func(t *testing.T, ids string) {
		resp, body := get(t, h, "/v1/boards/weekly-score/members?ids="+url.QueryEscape(ids))
		items := strings.Split(ids, ",")
		valid := ids != "" && len(items) <= board.MaxMembers && len(ids) <= web.MaxListBytes
		seen := map[string]bool{}
		for _, id := range items {
			valid = valid && codec.CheckID(id) == nil && !seen[id]
			seen[id] = true
		}
		switch {
		case valid && resp.StatusCode == 200:
			var page struct{ Members []struct{ Member string } }
			decode(t, body, &page)
			if len(page.Members) != len(items) {
				t.Fatalf("%q: %d members answered", ids, len(page.Members))
			}
		case !valid && resp.StatusCode == 400 && resp.Header.Get("Content-Type") == "application/problem+json":
		default:
			t.Fatalf("%q (valid %v): %d %s", ids, valid, resp.StatusCode, body)
		}
	})
}
