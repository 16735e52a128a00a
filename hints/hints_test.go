package hints_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/hints"
)

// seedBoards are seed 001's weekly boards (the score in tenths), a windows
// board of users, one of items (room ids: no variables) and a board whose
// name starts with a digit.
func seedBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	week := func(name, ev string) boarddef.Config {
		return boarddef.Config{Name: name, Events: []string{ev}, Member: "user_id", Value: "one", Kind: "periodic", Period: "week"}
	}
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "weekly-score", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week", Scale: 10},
		week("weekly-received", "received"),
		week("weekly-read", "read"),
		week("weekly-passed", "passed"),
		{Name: "item-trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, time.Hour)},
		{Name: "user-trades", Events: []string{"trade"}, Member: "user_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, time.Hour)},
		{Name: "7d-gifts", Events: []string{"gift"}, Member: "user_id", Kind: "rolling", Slice: time.Hour, Slices: 168},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

// standings builds a member's standings: board → [rank, total] per window
// (totals in units of 1/scale, as the store returns them).
func standings(member string, s map[string][][2]int64) board.MemberStandings {
	out := board.MemberStandings{Member: member}
	for name, ws := range s {
		bs := board.Standings{Board: name}
		for _, w := range ws {
			bs.Standings = append(bs.Standings, board.Standing{Rank: w[0], Total: w[1]})
		}
		out.Boards = append(out.Boards, bs)
	}
	return out
}

var seedRules = []hints.Rule{
	{Name: "unread", When: "weekly_received >= 10 && weekly_read < weekly_received / 2",
		Text: "You have {{.weekly_received}} new requests and read {{.weekly_read}}."},
	{Name: "top-ten", When: "rank_weekly_score > 0 && rank_weekly_score <= 10",
		Text: "You are #{{.rank_weekly_score}} this week with {{.weekly_score}} points.", Stop: true},
	{Name: "keep-going", When: "weekly_score > 0", Text: "{{.weekly_score}} points so far."},
	{Name: "trader", When: "user_trades_1h > 2 * user_trades && $env[\"7d_gifts\"] >= 1",
		Text: "{{.user_trades_1h}} traded in the last hour, {{index . \"7d_gifts\"}} gifts this week{{if gt .rank_user_trades_3m 0}}, #{{.rank_user_trades_3m}} right now{{end}}."},
	{Name: "passed-all", When: "weekly_passed > 0 && weekly_passed == weekly_received", Text: "All {{.weekly_passed}} passed."},
}

// TestChainSeed001 evaluates the seed's rules for several members: the
// rules that hold, in order, the chain ending at a rule with stop, the
// decimal score written exactly, the windows' variables and a board whose
// name starts with a digit.
func TestChainSeed001(t *testing.T) {
	c, err := hints.Compile(seedRules, seedBoards(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Boards(), []string{"weekly-score", "weekly-received", "weekly-read", "weekly-passed", "user-trades", "7d-gifts"}; !slices.Equal(got, want) {
		t.Fatalf("boards %v, want %v (item-trades ranks room ids)", got, want)
	}
	for _, tc := range []struct {
		name string
		in   map[string][][2]int64
		want []string
	}{
		{"nowhere", nil, nil},
		{"unread and top ten: stops", map[string][][2]int64{
			"weekly-received": {{3, 12}}, "weekly-read": {{9, 5}}, "weekly-score": {{4, 1255}}},
			[]string{"unread: You have 12 new requests and read 5.", "top-ten: You are #4 this week with 125.5 points."}},
		{"read half: not unread", map[string][][2]int64{
			"weekly-received": {{3, 12}}, "weekly-read": {{9, 6}}, "weekly-score": {{11, 10000000}}},
			[]string{"keep-going: 1000000 points so far."}},
		{"trader", map[string][][2]int64{
			"user-trades": {{2, 300}, {1, 700}}, "7d-gifts": {{40, 1}}, "weekly-passed": {{1, 3}}, "weekly-received": {{1, 3}}},
			[]string{"trader: 700 traded in the last hour, 1 gifts this week, #2 right now.", "passed-all: All 3 passed."}},
		{"trader unranked in 3m", map[string][][2]int64{"user-trades": {{0, 0}, {5, 1}}, "7d-gifts": {{40, 2}}},
			[]string{"trader: 1 traded in the last hour, 2 gifts this week."}},
	} {
		got, errs := c.Eval(standings("u1", tc.in))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		var lines []string
		for _, h := range got {
			lines = append(lines, h.Name+": "+h.Text)
		}
		if !slices.Equal(lines, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, lines, tc.want)
		}
	}
}

// TestChainRuntimeError: a rule that fails on a member's numbers does not
// hold, the others still run, and the error names the rule.
func TestChainRuntimeError(t *testing.T) {
	c, err := hints.Compile([]hints.Rule{
		{Name: "ratio", When: "weekly_read % weekly_received == 0", Text: "even"},
		{Name: "always", When: "true", Text: "hi"},
	}, seedBoards(t))
	if err != nil {
		t.Fatal(err)
	}
	got, errs := c.Eval(standings("u1", nil))
	if len(got) != 1 || got[0].Name != "always" || len(errs) != 1 || !strings.Contains(errs[0].Error(), "hint ratio: when:") {
		t.Fatalf("hints %v, errors %v", got, errs)
	}
	got, errs = c.Eval(standings("u1", map[string][][2]int64{"weekly-received": {{1, 4}}, "weekly-read": {{1, 8}}}))
	if len(got) != 2 || len(errs) != 0 {
		t.Fatalf("hints %v, errors %v", got, errs)
	}
}

// TestCompileErrors: each rule that does not compile stops Compile with
// its index, its name and the reason.
func TestCompileErrors(t *testing.T) {
	bs := seedBoards(t)
	ok := hints.Rule{Name: "ok", When: "true", Text: "x"}
	for _, c := range []struct {
		rule hints.Rule
		want string
	}{
		{hints.Rule{Name: "typo", When: "weekly_recieved > 1", Text: "x"}, "hints[1] (typo): when: unknown name weekly_recieved"},
		{hints.Rule{Name: "number", When: "weekly_received + 1", Text: "x"}, "hints[1] (number): when: expected bool"},
		{hints.Rule{Name: "syntax", When: "weekly_received >", Text: "x"}, "hints[1] (syntax): when:"},
		{hints.Rule{Name: "types", When: `weekly_received == "ten"`, Text: "x"}, "hints[1] (types): when: invalid operation"},
		{hints.Rule{Name: "items", When: "item_trades > 1", Text: "x"}, "hints[1] (items): when: unknown name item_trades"},
		{hints.Rule{Name: "text", When: "true", Text: "{{.weekly_read"}, "hints[1] (text): text:"},
		{hints.Rule{Name: "field", When: "true", Text: "{{if gt .weekly_read 1}}{{.weekly_raed}}{{end}}"}, "hints[1] (field): text: unknown name weekly_raed"},
		{hints.Rule{Name: "func", When: "true", Text: "{{nosuch .weekly_read}}"}, `hints[1] (func): text: template: func:1: function "nosuch" not defined`},
		{hints.Rule{Name: "fails", When: "true", Text: "{{index .weekly_read 1}}"}, "hints[1] (fails): text:"},
		{hints.Rule{Name: "no-when", Text: "x"}, "hints[1] (no-when): when: a condition is required"},
		{hints.Rule{Name: "no-text", When: "true", Text: " "}, "hints[1] (no-text): text: a text is required"},
		{hints.Rule{Name: "Bad Name", When: "true", Text: "x"}, `hints[1].name: "Bad Name" must be`},
		{hints.Rule{Name: "ok", When: "true", Text: "x"}, `hints[1].name: "ok" is already the name of hints[0]`},
	} {
		_, err := hints.Compile([]hints.Rule{ok, c.rule}, bs)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.rule, err, c.want)
		}
	}
	if c, err := hints.Compile(nil, bs); c != nil || err != nil {
		t.Errorf("no rules: %v %v, want nil, nil", c, err)
	}
}

// TestVariableCollision: boards whose variables would share a name stop
// Compile, naming both.
func TestVariableCollision(t *testing.T) {
	for _, names := range [][2]string{{"x", "rank-x"}, {"t", "t-3m"}} {
		bs, err := boarddef.Compile([]boarddef.Config{
			{Name: names[0], Events: []string{"trade"}, Member: "user_id", Kind: "windows", Slice: time.Minute, Windows: boarddef.Lengths(3 * time.Minute)},
			{Name: names[1], Events: []string{"gift"}, Member: "user_id", Kind: "total"},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = hints.Compile([]hints.Rule{{Name: "a", When: "true", Text: "x"}}, bs)
		if err == nil || !strings.Contains(err.Error(), "board "+names[0]) || !strings.Contains(err.Error(), "board "+names[1]) {
			t.Errorf("%v: %v, want an error naming both boards", names, err)
		}
	}
}

var boardName = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// FuzzVariables: for any two board names, either Compile refuses them
// naming both, or every variable is distinct, made of [a-z0-9_], read back
// through $env and a template, and each board's total goes by VarName of
// its name.
func FuzzVariables(f *testing.F) {
	for _, s := range [][2]string{{"x", "rank-x"}, {"weekly-score", "weekly-read"}, {"7d", "a"}, {"a-b", "a"}, {"t", "t-3m"}, {"rank-rank-a", "rank-a"}} {
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, a, b string, windows bool) {
		if !boardName.MatchString(a) || !boardName.MatchString(b) || a == b {
			t.Skip()
		}
		cfg := boarddef.Config{Name: a, Events: []string{"gift"}, Member: "user_id", Kind: "total"}
		if windows {
			cfg = boarddef.Config{Name: a, Events: []string{"gift"}, Member: "user_id", Kind: "windows", Slice: time.Minute,
				Windows: boarddef.Lengths(3*time.Minute, time.Hour)}
		}
		bs, err := boarddef.Compile([]boarddef.Config{cfg, {Name: b, Events: []string{"gift"}, Member: "user_id", Kind: "total"}})
		if err != nil {
			t.Fatal(err)
		}
		var rules []hints.Rule
		for _, name := range []string{a, b} {
			v := hints.VarName(name)
			rules = append(rules, hints.Rule{Name: "r-" + fmt.Sprint(len(rules)), When: fmt.Sprintf(`$env[%q] == 0 && $env["rank_%s"] == 0`, v, v),
				Text: fmt.Sprintf(`{{index . %q}}`, v)})
		}
		c, err := hints.Compile(rules, bs)
		if err != nil {
			if !strings.Contains(err.Error(), "board "+a) || !strings.Contains(err.Error(), "board "+b) {
				t.Fatalf("%s, %s: %v does not name both boards", a, b, err)
			}
			return
		}
		vars := c.Variables()
		seen := map[string]bool{}
		for _, v := range vars {
			if seen[v] || !regexp.MustCompile(`^[a-z0-9_]+$`).MatchString(v) {
				t.Fatalf("variables %v", vars)
			}
			seen[v] = true
		}
		want := 4
		if windows {
			want = 8
		}
		if len(vars) != want || !seen[hints.VarName(a)] || !seen[hints.VarName(b)] {
			t.Fatalf("variables %v", vars)
		}
		hs, errs := c.Eval(board.MemberStandings{})
		if len(hs) != 2 || len(errs) != 0 || hs[0].Text != "0" {
			t.Fatalf("%v %v", hs, errs)
		}
	})
}
