package codec

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// everyRuleSet returns every ordered selection of rule fields, from none to
// all six (1957 rule sets).
func everyRuleSet() []Rules {
	var out []Rules
	var walk func(r Rules)
	walk = func(r Rules) {
		out = append(out, append(Rules(nil), r...))
		for _, f := range ruleFields {
			if !r.Has(f) {
				walk(append(r, f))
			}
		}
	}
	walk(nil)
	return out
}

func TestParseRules(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"spotlight,screen_share,audio,volume,video,role", "spotlight,screen_share,audio,volume,video,role", ""},
		{" audio , volume ", "audio,volume", ""},
		{"role", "role", ""},
		{"", "", "empty"},
		{"audio,", "", `unknown field ""`},
		{"audio,mic", "", `unknown field "mic"`},
		{"Audio", "", `unknown field "Audio"`},
		{"audio,volume,audio", "", `field "audio" is listed twice`},
	}
	for _, tt := range tests {
		r, err := ParseRules(tt.in)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseRules(%q) = %v, %v; want error with %q", tt.in, r, err, tt.err)
			}
		case err != nil || r.String() != tt.want:
			t.Errorf("ParseRules(%q) = %v, %v; want %s", tt.in, r, err, tt.want)
		}
	}
	if !DefaultRules().Equal(Rules{RuleSpotlight, RuleScreenShare, RuleAudio, RuleVolume, RuleVideo, RuleRole}) {
		t.Errorf("DefaultRules = %s", DefaultRules())
	}
}

// The layouts docs/DESIGN.md §4 lists, pinned.
func TestMeetingRuleSetLayouts(t *testing.T) {
	tests := []struct {
		rules  string
		layout string
		unit   time.Duration
	}{
		{"spotlight,screen_share,audio,volume,video,role", "spotlight:1 screen_share:1 audio:1 volume:10 video:1 role:3 time:36 (53 bits)", 4 * time.Millisecond},
		{"audio,volume,video,role", "audio:1 volume:10 video:1 role:3 time:38 (53 bits)", time.Millisecond},
		{"spotlight,audio,volume,video,role", "spotlight:1 audio:1 volume:10 video:1 role:3 time:37 (53 bits)", 2 * time.Millisecond},
		{"screen_share,audio,volume", "screen_share:1 audio:1 volume:10 time:38 (50 bits)", time.Millisecond},
		{"role,spotlight", "role:3 spotlight:1 time:38 (42 bits)", time.Millisecond},
	}
	for _, tt := range tests {
		r, err := ParseRules(tt.rules)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMeetingRules(DefaultEpoch, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Layout().String(); got != tt.layout || m.TimeUnit() != tt.unit {
			t.Errorf("%s: layout %s unit %v, want %s unit %v", tt.rules, got, m.TimeUnit(), tt.layout, tt.unit)
		}
	}
	// The default rules with nobody spotlighted or sharing rank as the
	// legacy rules: same order on every pair of the legacy fields.
	if NewMeeting(DefaultEpoch).Version() == legacyMeeting(DefaultEpoch).Version() {
		t.Error("the default and the legacy rules share a version")
	}
	if a, b := NewMeeting(DefaultEpoch).Version(), NewMeeting(DefaultEpoch.Add(time.Hour)).Version(); a == b {
		t.Error("another epoch keeps the version")
	}
}

// Every rule set covers the same 8.7-year window in a unit of at most 4 ms,
// and fits 53 bits.
func TestMeetingEveryRuleSetWindow(t *testing.T) {
	last := DefaultEpoch.UnixMilli() + MeetingWindow.Milliseconds() - 1
	for _, r := range everyRuleSet() {
		m, err := NewMeetingRules(DefaultEpoch, r)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if m.Layout().Bits() > MaxBits || m.TimeUnit() > 4*time.Millisecond {
			t.Fatalf("%s: %s unit %v", r, m.Layout(), m.TimeUnit())
		}
		if _, err := m.Encode(MemberScore{Role: RoleHost, Volume: MaxVolume, Audio: 1, Video: 1, ScreenShare: 1, Spotlight: 1, TS: last}); err != nil {
			t.Fatalf("%s: the window's last ms: %v", r, err)
		}
	}
}

// lowestPair returns two member scores that differ only in the least
// significant field of r (the time when r is empty): hi ranks above lo.
func lowestPair(r Rules, ts int64) (hi, lo MemberScore) {
	lo = MemberScore{Spotlight: 1, ScreenShare: 1, Audio: 1, Volume: 500, Video: 1, Role: RoleGuest, TS: ts}
	hi = lo
	if len(r) == 0 {
		hi.TS += 4
		return hi, lo
	}
	switch r[len(r)-1] {
	case RuleSpotlight:
		lo.Spotlight = 0
	case RuleScreenShare:
		lo.ScreenShare = 0
	case RuleAudio:
		lo.Audio = 0
	case RuleVolume:
		lo.Volume = 499
	case RuleVideo:
		lo.Video = 0
	case RuleRole:
		lo.Role = RoleStudent
	}
	// the older one wins nothing: make lo newer so only the field decides
	lo.TS += 4
	return hi, lo
}

// TestEveryRuleSetOrdersInRedis shows in a real Redis, for every rule set,
// that two members differing only in the lowest ranked field order by it,
// whatever their times, and that the scores come back exact.
func TestEveryRuleSetOrdersInRedis(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	ctx := context.Background()
	ts := time.Date(2033, 9, 1, 0, 0, 0, 0, time.UTC).UnixMilli() // near the window's end: the largest scores
	sets := everyRuleSet()
	type pair struct{ hi, lo float64 }
	pairs := make([]pair, len(sets))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, rs := range sets {
			m, err := NewMeetingRules(DefaultEpoch, rs)
			if err != nil {
				return err
			}
			hi, lo := lowestPair(rs, ts)
			sh, err1 := m.Encode(hi)
			sl, err2 := m.Encode(lo)
			if err1 != nil || err2 != nil {
				return fmt.Errorf("%s: %v %v", rs, err1, err2)
			}
			pairs[i] = pair{sh, sl}
			// "a" < "b": on equal scores Redis would put b first.
			p.ZAdd(ctx, fmt.Sprintf("rules:%d", i), redis.Z{Score: sh, Member: "a"}, redis.Z{Score: sl, Member: "b"})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	cmds := make([]*redis.ZSliceCmd, len(sets))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range sets {
			cmds[i] = p.ZRevRangeWithScores(ctx, fmt.Sprintf("rules:%d", i), 0, -1)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, rs := range sets {
		z := cmds[i].Val()
		if len(z) != 2 || z[0].Member != "a" || z[0].Score != pairs[i].hi || z[1].Score != pairs[i].lo {
			t.Fatalf("rules %q: ZREVRANGE %v, want a (%.0f) above b (%.0f)", rs, z, pairs[i].hi, pairs[i].lo)
		}
	}
}
