package trace

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

func boardConfig(seed uint64, now int64) BoardConfig {
	return BoardConfig{Seed: seed, Records: 4000, Now: now, ArrayRate: 0.3, IDRate: 0.4, RetryRate: 0.05, LateRate: 0.03,
		DecimalRate: 0.3, Cheaters: 3, CheatRate: 0.03, RemoveRate: 0.01, RemoveBoards: []string{"gifts-day", "room-gifts-7d"}}
}

// TestGenerateBoards checks that board records decode to exactly their
// Events, that retries repeat a record whose events all carry ids, that late
// events are at least LateAge old and the others within Span, and that the
// same config gives the same records; that scores come in tenths too, and
// that a cheater's records (events and removals) are single events on one
// topic keyed by the cheater's room.
func TestGenerateBoards(t *testing.T) {
	now := time.Now()
	cfg := boardConfig(3, now.UnixMilli())
	recs := GenerateBoards(cfg)
	if !reflect.DeepEqual(recs, GenerateBoards(cfg)) {
		t.Fatal("two generations of one config differ")
	}
	dec := codec.NewDecoder(codec.DecodeConfig{})
	types := map[codec.Type]int{}
	var retries, late, ids, arrays, tenths, removes int
	seen := map[string]bool{}
	cheaterTopic := map[string]string{}
	for i, r := range recs {
		got, err := dec.Decode(nil, r.Value, topicSource(r.Topic), now)
		if err != nil || !reflect.DeepEqual(got, r.Events) {
			t.Fatalf("record %d %s: decoded %+v (%v), want %+v", i, r.Value, got, err, r.Events)
		}
		if !r.Good() || r.Key != r.Events[0].RoomID {
			t.Fatalf("record %d: bad %q, key %q", i, r.Bad, r.Key)
		}
		if len(r.Events) > 1 {
			arrays++
		}
		if r.Dup {
			retries++
			if !seen[string(r.Value)] {
				t.Fatalf("record %d: retry of a record never sent: %s", i, r.Value)
			}
			for _, e := range r.Events {
				if e.ID == "" {
					t.Fatalf("record %d: retry of an event without id: %s", i, r.Value)
				}
			}
			continue
		}
		seen[string(r.Value)] = true
		if strings.Contains(r.Key, "cheat-r-") {
			if topic, ok := cheaterTopic[r.Key]; (ok && topic != r.Topic) || len(r.Events) != 1 {
				t.Fatalf("record %d: cheater %s on topic %s with %d events, want one event on %s", i, r.Key, r.Topic, len(r.Events), cheaterTopic[r.Key])
			}
			cheaterTopic[r.Key] = r.Topic
		}
		for _, e := range r.Events {
			types[e.Type]++
			if e.ID != "" {
				ids++
			}
			if e.Decimals > 0 {
				tenths++
			}
			if e.Type == codec.TypeRemove {
				removes++
				continue
			}
			switch age := cfg.Now - e.TS; {
			case age >= LateAge:
				late++
			case age < 0 || age >= 2*3600*1000:
				t.Fatalf("record %d: event %d ms old", i, age)
			}
		}
	}
	for _, ty := range []codec.Type{codec.TypeGift, codec.TypeScore, codec.TypeReceived, codec.TypeRead, codec.TypePassed, codec.TypeTrade} {
		if types[ty] == 0 {
			t.Errorf("no %s events", ty)
		}
	}
	if retries == 0 || late == 0 || ids == 0 || arrays == 0 || tenths == 0 || removes == 0 {
		t.Fatalf("retries %d, late %d, ids %d, arrays %d, scores in tenths %d, removes %d: want some of each", retries, late, ids, arrays, tenths, removes)
	}
	t.Logf("%d records: %d retries, %d arrays, %d late events, %d with ids, types %v", len(recs), retries, arrays, late, ids, types)
}

func TestInterleave(t *testing.T) {
	a := Generate(Config{Seed: 1, Records: 300})
	b := GenerateBoards(BoardConfig{Seed: 1, Records: 200, Now: time.Now().UnixMilli()})
	m := Interleave(9, a, b)
	if len(m) != len(a)+len(b) {
		t.Fatalf("%d records, want %d", len(m), len(a)+len(b))
	}
	var ga, gb []Record
	for _, r := range m {
		if r.Events != nil && r.Events[0].Type.Board() {
			gb = append(gb, r)
		} else {
			ga = append(ga, r)
		}
	}
	for i := range b {
		if !bytes.Equal(gb[i].Value, b[i].Value) {
			t.Fatalf("board record %d out of order", i)
		}
	}
	if len(ga) != len(a) {
		t.Fatalf("%d meeting records, want %d", len(ga), len(a))
	}
}
