package trace

import (
	"bytes"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
)

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := DefaultConfig(7)
	cfg.Records = 3000
	a, b := Generate(cfg), Generate(cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two traces of one seed differ")
	}
	cfg.Seed = 8
	if c := Generate(cfg); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 7 and 8 give the same trace")
	}
}

// within fails unless got is within five standard deviations (plus a little)
// of a binomial share want over n draws.
func within(t *testing.T, what string, got, n int, want float64) {
	t.Helper()
	share := float64(got) / float64(n)
	if tol := 5*math.Sqrt(want*(1-want)/float64(n)) + 0.002; math.Abs(share-want) > tol {
		t.Errorf("%s: share %.4f (%d of %d), want %.4f ± %.4f", what, share, got, n, want, tol)
	} else {
		t.Logf("%s: share %.4f (%d of %d), want %.4f", what, share, got, n, want)
	}
}

func TestGenerateMix(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) { testGenerateMix(t, seed) })
	}
}

func testGenerateMix(t *testing.T, seed uint64) {
	cfg := DefaultConfig(seed)
	cfg.Records = 20000
	cfg.RoomPrefix = "prod-"
	recs := Generate(cfg)
	if len(recs) != cfg.Records {
		t.Fatalf("got %d records, want %d", len(recs), cfg.Records)
	}

	var bad, dup, reordered, arrays, fresh, withSource, crossTopic int
	types := map[codec.Type]int{}
	roles := map[codec.Role]int{}
	topicTypes := map[string]map[codec.Type]bool{}
	badKinds := map[string]bool{}
	var newest int64
	for i, r := range recs {
		switch {
		case !r.Good():
			bad++
			badKinds[r.Bad] = true
			if r.Events != nil || r.Dup || r.Reordered {
				t.Fatalf("record %d: bad record with events or flags: %+v", i, r)
			}
			continue
		case r.Dup:
			dup++
			if r.Topic != topicOf(r.Events[0].Source) {
				crossTopic++
			}
		case r.Reordered:
			reordered++
		}
		if len(r.Events) == 0 {
			t.Fatalf("record %d: good record without events", i)
		}
		if !r.Dup {
			fresh++
			if r.Value[0] == '[' {
				arrays++
			}
		}
		if bytes.Contains(r.Value, []byte(`"source":`)) {
			withSource++
		}
		oldest := int64(math.MaxInt64)
		for _, e := range r.Events {
			if e.RoomID != r.Key || !strings.HasPrefix(e.RoomID, "prod-r-") {
				t.Fatalf("record %d: event room %q, key %q", i, e.RoomID, r.Key)
			}
			if e.TS < cfg.BaseTS {
				t.Fatalf("record %d: ts %d before BaseTS", i, e.TS)
			}
			types[e.Type]++
			if e.Type == codec.TypeRole {
				roles[codec.Role(e.Value)]++
			}
			if topicTypes[r.Topic] == nil {
				topicTypes[r.Topic] = map[codec.Type]bool{}
			}
			topicTypes[r.Topic][e.Type] = true
			oldest = min(oldest, e.TS)
		}
		if r.Reordered && oldest >= newest {
			t.Errorf("record %d: reordered, but its ts %d is not older than %d", i, oldest, newest)
		}
		if !r.Dup {
			newest = max(newest, r.Events[0].TS)
		}
	}

	n := len(recs)
	within(t, "bad", bad, n, cfg.BadRate)
	within(t, "dup", dup, n, cfg.DupRate)
	within(t, "reordered", reordered, n, cfg.ReorderRate)
	within(t, "arrays among fresh records", arrays, fresh, cfg.ArrayRate)
	for typ := codec.TypeJoin; typ <= codec.TypeRole; typ++ {
		if types[typ] == 0 {
			t.Errorf("no %s events", typ)
		}
	}
	if types[codec.TypeVolume] < n/2 {
		t.Errorf("%d volume events in %d records; volume indications should dominate", types[codec.TypeVolume], n)
	}
	for r := codec.RoleStudent; r <= codec.RoleAssistant; r++ {
		if roles[r] == 0 {
			t.Errorf("no role event gives role %s", r)
		}
	}
	wantTopics := map[string][]codec.Type{
		"rtc":    {codec.TypeVolume, codec.TypeAudio, codec.TypeVideo},
		"client": {codec.TypeAudio, codec.TypeVideo, codec.TypeJoin, codec.TypeLeave},
		"signal": {codec.TypeRole, codec.TypeJoin, codec.TypeLeave},
	}
	for topic, ts := range wantTopics {
		for _, typ := range ts {
			if !topicTypes[topic][typ] {
				t.Errorf("no %s event on topic %s", typ, topic)
			}
		}
	}
	if withSource == 0 || crossTopic == 0 {
		t.Errorf("%d records name their source, %d duplicates changed topic; want some of each", withSource, crossTopic)
	}
	if len(badKinds) < 25 {
		t.Errorf("only %d kinds of bad record: %v", len(badKinds), badKinds)
	}
}

func topicOf(s codec.Source) string { return s.String() }

func TestGenerateFeedsModel(t *testing.T) {
	cfg := DefaultConfig(3)
	cfg.Records = 20000
	recs := Generate(cfg)
	m := model.New(codec.NewMeeting(codec.DefaultEpoch))
	for _, r := range recs {
		for _, e := range r.Events {
			m.Apply(e)
		}
	}
	rooms := m.Rooms()
	if len(rooms) != cfg.Rooms {
		t.Errorf("events in %d rooms, want %d", len(rooms), cfg.Rooms)
	}
	var nonEmpty, largest, excluded, left, hosts int
	for _, room := range rooms {
		rk := m.Ranking(room)
		if len(rk) > 0 {
			nonEmpty++
		}
		largest = max(largest, len(rk))
		for _, mem := range rk {
			if mem.Role == codec.RoleHost {
				hosts++
			}
		}
	}
	// Count members out of the ranking, by cause.
	for _, r := range recs {
		for _, e := range r.Events {
			s, _ := m.State(e.RoomID, e.UserID)
			if !codec.Role(s.Role.Value).Ranked() {
				excluded++
			}
			if s.Presence.Value == model.PresenceLeft {
				left++
			}
		}
	}
	t.Logf("%d rooms, %d with ranked members, largest ranking %d, %d ranked hosts", len(rooms), nonEmpty, largest, hosts)
	if nonEmpty < cfg.Rooms*3/4 {
		t.Errorf("only %d of %d rooms have ranked members", nonEmpty, cfg.Rooms)
	}
	if largest < 50 {
		t.Errorf("the largest ranking has %d members, want at least 50", largest)
	}
	if excluded == 0 || left == 0 || hosts == 0 {
		t.Errorf("events of excluded members %d, of members who left %d, ranked hosts %d; want some of each", excluded, left, hosts)
	}
}

// TestDecode checks the trace against rostrum's decoder: every good record
// decodes to exactly its Events, every bad one is rejected; a record of an
// unknown type decodes to ignored events when they are skipped, and is
// rejected when they go to the DLQ.
func TestDecode(t *testing.T) {
	dec := codec.NewDecoder(codec.DecodeConfig{IgnoreUnknownTypes: true})
	strict := codec.NewDecoder(codec.DecodeConfig{})
	now := time.Now()
	unknown, kinds := 0, map[codec.Type]int{}
	for _, seed := range []uint64{1, 2, 3} {
		cfg := DefaultConfig(seed)
		cfg.BadRate = 0.2
		for i, r := range Generate(cfg) {
			got, err := dec.Decode(nil, r.Value, topicSource(r.Topic), now)
			if r.Unknown {
				unknown++
				if _, err := strict.Decode(nil, r.Value, topicSource(r.Topic), now); err == nil {
					t.Errorf("seed %d record %d: unknown type accepted by the strict decoder: %s", seed, i, r.Value)
				}
			}
			for _, e := range r.Events {
				kinds[e.Type]++
			}
			switch {
			case r.Good() && err != nil:
				t.Errorf("seed %d record %d: good record rejected: %v\n%s", seed, i, err, r.Value)
			case r.Good() && !reflect.DeepEqual(got, r.Events):
				t.Errorf("seed %d record %d: decoded\n%+v\nwant\n%+v\nfrom %s", seed, i, got, r.Events, r.Value)
			case !r.Good() && err == nil:
				t.Errorf("seed %d record %d: bad record (%s) accepted: %q", seed, i, r.Bad, r.Value)
			}
		}
	}
	if unknown == 0 || kinds[codec.TypeIgnored] == 0 || kinds[codec.TypeScreenShare] == 0 || kinds[codec.TypeSpotlight] == 0 {
		t.Errorf("records of unknown types %d, event kinds %v: want screen shares, spotlights and ignored events", unknown, kinds)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig(1)
	if err := ok.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"negative rooms", func(c *Config) { c.Rooms = -1 }},
		{"negative members", func(c *Config) { c.MaxMembers = -1 }},
		{"negative records", func(c *Config) { c.Records = -1 }},
		{"BaseTS before the epoch", func(c *Config) { c.BaseTS = codec.DefaultEpoch.UnixMilli() - 1 }},
		{"BaseTS past the score window", func(c *Config) {
			c.BaseTS = codec.DefaultEpoch.Add(codec.MeetingWindow).UnixMilli() - 10
		}},
		{"rate above 1", func(c *Config) { c.ArrayRate = 1.5 }},
		{"negative rate", func(c *Config) { c.DupRate = -0.1 }},
		{"NaN rate", func(c *Config) { c.BadRate = math.NaN() }},
		{"rates sum above 1", func(c *Config) { c.BadRate, c.DupRate, c.ReorderRate = 0.5, 0.4, 0.2 }},
		{"prefix charset", func(c *Config) { c.RoomPrefix = "prod/" }},
		{"prefix too long", func(c *Config) { c.RoomPrefix = strings.Repeat("p", 125) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			if err := c.Validate(); err == nil {
				t.Errorf("Validate(%+v) = nil, want an error", c)
			}
			defer func() {
				if recover() == nil {
					t.Error("Generate did not panic")
				}
			}()
			Generate(c)
		})
	}
}

func TestGenerateEdgeConfigs(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 1, Rooms: 1, MaxMembers: 1, Records: 500, ArrayRate: 1, ReorderRate: 1},
		{Seed: 2, Records: 500, BadRate: 1},
		{Seed: 3, Records: 500, DupRate: 1},
		{Seed: 4, Rooms: 3, MaxMembers: 2, Records: 2000, ArrayRate: 0.5, BadRate: 0.3, DupRate: 0.3, ReorderRate: 0.4},
	} {
		recs := Generate(cfg)
		if len(recs) != cfg.Records {
			t.Errorf("%+v: %d records", cfg, len(recs))
		}
	}
}
