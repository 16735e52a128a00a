package ranking

import (
	"math/rand/v2"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

func TestMemberStatePackRoundTrip(t *testing.T) {
	s := MemberState{Audio: 1, Video: 1, Volume: 999, Role: codec.RoleHost, Presence: PresenceIn,
		AudioTS: 1763700000001, VolumeTS: 1763700000002, VideoTS: 0, RoleTS: 1763700000004, PresenceTS: 1763700000123, MaxTS: 1763700000123}
	b := s.AppendBinary(nil)
	if len(b) != StateSize {
		t.Fatalf("packed %d bytes, want %d", len(b), StateSize)
	}
	var got MemberState
	if err := got.UnmarshalBinary(b); err != nil || got != s {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, s)
	}
	if err := got.UnmarshalBinary(b[:10]); err == nil {
		t.Fatal("short state accepted")
	}
	// A field older than the delta range is stored as the oldest it can say.
	s.AudioTS = s.MaxTS - 100*24*3600*1000
	if err := got.UnmarshalBinary(s.AppendBinary(nil)); err != nil || got.AudioTS != s.MaxTS-(1<<32-2) {
		t.Fatalf("clamped field: %d, %v", got.AudioTS, err)
	}
}

// TestMemberStateMergeOrderFree checks the property the whole pipeline rests
// on: folding the same events in any order, any grouping and with duplicates
// gives the same state.
func TestMemberStateMergeOrderFree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	types := []codec.Type{codec.TypeJoin, codec.TypeLeave, codec.TypeAudio, codec.TypeVideo, codec.TypeVolume, codec.TypeRole}
	for iter := 0; iter < 5000; iter++ {
		evs := make([]codec.Event, 1+r.IntN(12))
		for i := range evs {
			ev := codec.Event{Type: types[r.IntN(len(types))], TS: 100 + r.Int64N(4)} // few distinct times: many ties
			switch ev.Type {
			case codec.TypeAudio, codec.TypeVideo:
				ev.Value = r.Int64N(2)
			case codec.TypeVolume:
				ev.Value = r.Int64N(1000)
			case codec.TypeRole:
				ev.Value = 1 + r.Int64N(7)
			}
			evs[i] = ev
		}
		var want MemberState
		for i := range evs {
			want.Apply(&evs[i])
		}
		// Shuffle, duplicate some, and fold in two groups merged afterwards.
		perm := r.Perm(len(evs))
		var a, b MemberState
		for k, i := range perm {
			if k%2 == 0 {
				a.Apply(&evs[i])
			} else {
				b.Apply(&evs[i])
			}
			if r.IntN(3) == 0 {
				b.Apply(&evs[i])
			}
		}
		b.Merge(&a)
		b.Merge(&a)
		if b != want {
			t.Fatalf("events %+v: folded out of order %+v, in order %+v", evs, b, want)
		}
	}
}

func TestRankedAndEffective(t *testing.T) {
	var s MemberState
	if s.Ranked() {
		t.Fatal("a member never seen ranks")
	}
	s.Apply(&codec.Event{Type: codec.TypeJoin, TS: 10})
	if !s.Ranked() || s.Effective().Role != codec.RoleStudent {
		t.Fatalf("a joined member ranks as student: %+v", s)
	}
	s.Apply(&codec.Event{Type: codec.TypeRole, Value: int64(codec.RoleAssistant), TS: 11})
	if s.Ranked() {
		t.Fatal("an assistant ranks")
	}
	s.Apply(&codec.Event{Type: codec.TypeRole, Value: int64(codec.RoleHost), TS: 12})
	s.Apply(&codec.Event{Type: codec.TypeLeave, TS: 12})
	if s.Ranked() {
		t.Fatal("a member who left ranks (leave wins a tie with the implicit join)")
	}
}
