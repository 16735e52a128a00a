package sink

import "testing"

// TestRoomKeys: the three names cut from one string are the room's prefix and
// each kind's letter, and share the room's hash tag.
func TestRoomKeys(t *testing.T) {
	for _, c := range []struct{ env, room string }{{"prod", "r-1"}, {"e", "a"}, {"staging_2", "room-with-a-longer-id-0123456789"}} {
		k := RoomKeys(c.env, c.room)
		p := "rostrum:" + c.env + ":{" + c.room + "}:"
		if p != RoomPrefix(c.env, c.room) {
			t.Fatalf("RoomPrefix(%q, %q) = %q, want %q", c.env, c.room, RoomPrefix(c.env, c.room), p)
		}
		got := [3]string{k.Members, k.Ranking, k.Stable}
		want := [3]string{p + "m", p + "z", p + "s"}
		if got != want {
			t.Fatalf("RoomKeys(%q, %q) = %q, want %q", c.env, c.room, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = RoomKeys("prod", "r-1") }); n > 1 {
		t.Fatalf("RoomKeys allocates %v times, want 1", n)
	}
}
