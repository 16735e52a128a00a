package ranking

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
)

func TestMemberStatePackRoundTrip(t *testing.T) {
	s := MemberState{Audio: 1, Video: 1, Volume: 999, Role: codec.RoleHost, Presence: PresenceIn, ScreenShare: 1,
		AudioTS: 1763700000001, VolumeTS: 1763700000002, VideoTS: 0, RoleTS: 1763700000004, PresenceTS: 1763700000123,
		ScreenShareTS: 1763700000100, MaxTS: 1763700000123}
	b := s.AppendBinary(nil)
	if len(b) != 11+4*5 {
		t.Fatalf("packed %d bytes, want %d (five registers set)", len(b), 11+4*5)
	}
	var got MemberState
	if err := got.UnmarshalBinary(b); err != nil || got != s {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, s)
	}
	for _, n := range []int{0, 1, 10, len(b) - 1} {
		if err := got.UnmarshalBinary(b[:n]); err == nil {
			t.Fatalf("state cut to %d bytes accepted", n)
		}
	}
	// Every register set: the longest form.
	s.VideoTS, s.SpotlightTS, s.Spotlight = 1763700000003, 1763700000050, 1
	if b := s.AppendBinary(nil); len(b) != StateSize {
		t.Fatalf("packed %d bytes, want StateSize %d", len(b), StateSize)
	} else if err := got.UnmarshalBinary(b); err != nil || got != s {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, s)
	}
	// A field older than the delta range is stored as the oldest it can say.
	s.AudioTS = s.MaxTS - 100*24*3600*1000
	if err := got.UnmarshalBinary(s.AppendBinary(nil)); err != nil || got.AudioTS != s.MaxTS-(1<<32-1) {
		t.Fatalf("clamped field: %d, %v", got.AudioTS, err)
	}
	// A new member's update (presence only) is 15 bytes.
	if b := (&MemberState{Presence: PresenceIn, PresenceTS: 5, MaxTS: 5}).AppendBinary(nil); len(b) != 15 {
		t.Fatalf("presence-only state packs to %d bytes, want 15", len(b))
	}
}

// TestMemberStateOnlyFormat2: a state whose first byte is not format
// version 2 is refused with an error naming the format, whatever its length:
// nothing reads the 35-byte format 1 of unreleased commits any more.
func TestMemberStateOnlyFormat2(t *testing.T) {
	v2 := (&MemberState{Audio: 1, Presence: PresenceIn, PresenceTS: 5, AudioTS: 4, MaxTS: 5}).AppendBinary(nil)
	// Format 1: audio, video, presence, role, the version byte 1 at offset
	// 4, volume, the newest time and five time deltas.
	v1 := append([]byte{1, 0, PresenceIn, byte(codec.RoleHost), 1, 0, 2}, make([]byte, 8+5*4)...)
	other := append([]byte{3}, v2[1:]...)
	for name, b := range map[string][]byte{"empty": nil, "format 1": v1, "format 3": other} {
		var got MemberState
		err := got.UnmarshalBinary(b)
		if err == nil || !strings.Contains(err.Error(), "not of format version 2") {
			t.Errorf("%s (%d bytes): %v, want an error naming format version 2", name, len(b), err)
		}
	}
}

// TestMemberStateMergeOrderFree checks the property the whole pipeline rests
// on: folding the same events in any order, any grouping and with duplicates
// gives the same state.
func TestMemberStateMergeOrderFree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	types := []codec.Type{codec.TypeJoin, codec.TypeLeave, codec.TypeAudio, codec.TypeVideo, codec.TypeVolume, codec.TypeRole,
		codec.TypeScreenShare, codec.TypeSpotlight}
	for iter := 0; iter < 5000; iter++ {
		evs := make([]codec.Event, 1+r.IntN(12))
		for i := range evs {
			ev := codec.Event{Type: types[r.IntN(len(types))], TS: 100 + r.Int64N(4)} // few distinct times: many ties
			switch ev.Type {
			case codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare, codec.TypeSpotlight:
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
