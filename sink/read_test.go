package sink_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
)

// setMember applies one member's events to a room, as its own part on
// partition 0 at offset last.
func setMember(t *testing.T, s *sink.Store, room, user string, last int64, evs ...codec.Event) {
	t.Helper()
	if _, err := s.Apply(context.Background(), []ranking.RoomUpdate{update(room, user, 0, last, evs...)}, nil); err != nil {
		t.Fatal(err)
	}
}

// storeMerged merges the room's raw top-N into its stable list and stores it,
// as the processor does after an apply.
func storeMerged(t *testing.T, s *sink.Store, room string) []string {
	t.Helper()
	ctx := context.Background()
	st, err := s.Read(ctx, []string{room})
	if err != nil {
		t.Fatal(err)
	}
	var raw []string
	for _, m := range st[0].Top {
		raw = append(raw, m.UserID)
	}
	list := stability.Merge(nil, st[0].Stable, raw, 7)
	ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: room, PrevSeq: st[0].Seq, Version: st[0].Version, List: list, Out: []byte("out")}})
	if err != nil || !ok[0] {
		t.Fatalf("store stable list of %s: %v %v", room, ok, err)
	}
	return list
}

func ids(ms []ranking.MemberView) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.UserID
	}
	return out
}

func TestRoomView(t *testing.T) {
	ctx := context.Background()
	s := newSink(t, testenv.StartRedis(t).Client())
	ev := func(typ codec.Type, v int64, dt int64) codec.Event {
		return codec.Event{Type: typ, Value: v, TS: base + dt}
	}
	setMember(t, s, "r1", "ann", 1, ev(codec.TypeAudio, 1, 0), ev(codec.TypeVolume, 500, 1), ev(codec.TypeRole, int64(codec.RoleHost), 2))
	setMember(t, s, "r1", "bob", 2, ev(codec.TypeVolume, 100, 3), ev(codec.TypeVideo, 1, 4))
	setMember(t, s, "r1", "cai", 3, ev(codec.TypeJoin, 0, 5))
	setMember(t, s, "r1", "dev", 4, ev(codec.TypeRole, int64(codec.RoleAssistant), 6)) // never ranks
	list := storeMerged(t, s, "r1")

	v, err := s.RoomView(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Room != "r1" || v.Seq != 1 || v.Members != 3 {
		t.Fatalf("room %q seq %d members %d, want r1 1 3", v.Room, v.Seq, v.Members)
	}
	if want := []string{"ann", "bob", "cai"}; !slices.Equal(ids(v.Raw), want) {
		t.Fatalf("raw %v, want %v", ids(v.Raw), want)
	}
	if !slices.Equal(ids(v.Stable), list) {
		t.Fatalf("stable %v, want the stored list %v", ids(v.Stable), list)
	}
	// From the score: the time rounded down to the default rules' 4 ms.
	ann := ranking.MemberView{UserID: "ann", Audio: 1, Volume: 500, Video: 0, Role: "host", TS: base}
	ann.Score, _ = codec.NewMeeting(codec.DefaultEpoch).Encode(codec.MemberScore{Audio: 1, Volume: 500, Role: codec.RoleHost, TS: base + 2})
	if v.Raw[0] != ann {
		t.Fatalf("raw[0] = %+v, want %+v", v.Raw[0], ann)
	}
	if b := v.Raw[1]; b.Volume != 100 || b.Video != 1 || b.Role != "student" || b.TS != base+4 {
		t.Fatalf("raw[1] = %+v", b)
	}

	// ann leaves; until the processor stores a new list, the stored one still
	// holds her, and her fields come from her stored state.
	setMember(t, s, "r1", "ann", 5, ev(codec.TypeLeave, 0, 10))
	v, err = s.RoomView(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if v.Members != 2 || !slices.Equal(ids(v.Raw), []string{"bob", "cai"}) || !slices.Equal(ids(v.Stable), list) {
		t.Fatalf("after the leave: members %d raw %v stable %v", v.Members, ids(v.Raw), ids(v.Stable))
	}
	gone := v.Stable[slices.Index(list, "ann")]
	if want := (ranking.MemberView{UserID: "ann", Audio: 1, Volume: 500, Role: "host", TS: base + 10}); gone != want {
		t.Fatalf("departed stable member %+v, want %+v", gone, want)
	}
}

func TestRoomViewUnknownAndUnranked(t *testing.T) {
	ctx := context.Background()
	s := newSink(t, testenv.StartRedis(t).Client())
	if _, err := s.RoomView(ctx, "nobody"); !errors.Is(err, ranking.ErrUnknownRoom) {
		t.Fatalf("unknown room: %v, want ranking.ErrUnknownRoom", err)
	}
	// A room whose only member never ranks exists, with empty lists.
	setMember(t, s, "r2", "pick", 1, codec.Event{Type: codec.TypeRole, Value: int64(codec.RoleScreenPicker), TS: base})
	v, err := s.RoomView(ctx, "r2")
	if err != nil {
		t.Fatal(err)
	}
	if v.Members != 0 || v.Seq != 0 || len(v.Raw) != 0 || len(v.Stable) != 0 {
		t.Fatalf("unranked room: %+v", v)
	}
}

func TestRooms(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	other, err := sink.New(c, sink.Config{Env: "other", CacheMembers: sink.DefaultCacheMembers, RoomTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	join := codec.Event{Type: codec.TypeJoin, TS: base}
	// room id → how many stable lists to store (its seq); "a:s" checks that a
	// room id ending like a key suffix is read whole.
	want := []ranking.RoomSummary{{Room: "busy", Seq: 3, Members: 3}, {Room: "a:s", Seq: 1, Members: 1}, {Room: "calm", Seq: 1, Members: 1}, {Room: "new", Seq: 0, Members: 1}}
	off := int64(0)
	for _, w := range want {
		for i := range int(w.Members) {
			off++
			setMember(t, s, w.Room, fmt.Sprintf("u%d", i), off, join)
		}
		for range w.Seq {
			st, _ := s.Read(ctx, []string{w.Room})
			if ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: w.Room, PrevSeq: st[0].Seq, Version: st[0].Version}}); err != nil || !ok[0] {
				t.Fatalf("store %s: %v %v", w.Room, ok, err)
			}
		}
	}
	setMember(t, other, "elsewhere", "u", 1, join)
	// A room whose only member never ranked is listed, with no members.
	setMember(t, s, "unranked", "pick", 99, codec.Event{Type: codec.TypeRole, Value: int64(codec.RoleScreenPicker), TS: base})
	want = append(want, ranking.RoomSummary{Room: "unranked"})

	got, err := s.Rooms(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Rooms = %+v\nwant    %+v", got, want)
	}
	got, err = s.Rooms(ctx, 2)
	if err != nil || len(got) != 2 {
		t.Fatalf("Rooms(2) = %+v, %v", got, err)
	}
	if got, err = s.Rooms(ctx, 0); err != nil || len(got) != 0 {
		t.Fatalf("Rooms(0) = %+v, %v", got, err)
	}
}

// TestRoomsCluster lists rooms spread over the masters of a Redis Cluster.
func TestRoomsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster start skipped in -short mode")
	}
	ctx := context.Background()
	cl := testenv.StartRedisCluster(t)
	var c redis.UniversalClient = cl.Client()
	s := newSink(t, c)
	var want []string
	for i := range 30 {
		room := fmt.Sprintf("room-%02d", i)
		want = append(want, room)
		setMember(t, s, room, "a", 1, codec.Event{Type: codec.TypeAudio, Value: 1, TS: base})
	}
	got, err := s.Rooms(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var rooms []string
	for _, r := range got {
		if r.Members != 1 {
			t.Fatalf("%+v: want 1 member", r)
		}
		rooms = append(rooms, r.Room)
	}
	if !slices.Equal(rooms, want) {
		t.Fatalf("rooms %v, want %v", rooms, want)
	}
	v, err := s.RoomView(ctx, "room-07")
	if err != nil || len(v.Raw) != 1 || v.Raw[0].Audio != 1 {
		t.Fatalf("RoomView on the cluster: %+v, %v", v, err)
	}
}

// TestRoomViews: reading many rooms in one round trip gives each room what
// RoomView gives it, in the order asked, an unknown room its
// ErrUnknownRoom.
func TestRoomViews(t *testing.T) {
	ctx := context.Background()
	s := newSink(t, testenv.StartRedis(t).Client())
	ev := func(typ codec.Type, v int64, dt int64) codec.Event {
		return codec.Event{Type: typ, Value: v, TS: base + dt}
	}
	setMember(t, s, "r1", "ann", 1, ev(codec.TypeAudio, 1, 0), ev(codec.TypeVolume, 500, 1))
	setMember(t, s, "r1", "bob", 2, ev(codec.TypeVolume, 100, 3))
	storeMerged(t, s, "r1")
	setMember(t, s, "r3", "cai", 3, ev(codec.TypeJoin, 0, 5))
	storeMerged(t, s, "r3")
	setMember(t, s, "r3", "cai", 4, ev(codec.TypeLeave, 0, 6)) // the stored list lags: a second round trip

	rooms := []string{"r3", "nobody", "r1"}
	views, errs := s.RoomViews(ctx, rooms)
	if len(views) != 3 || len(errs) != 3 {
		t.Fatalf("%d views, %d errors for 3 rooms", len(views), len(errs))
	}
	for i, room := range rooms {
		v, err := s.RoomView(ctx, room)
		if !errors.Is(errs[i], err) && (err != nil || errs[i] != nil) {
			t.Errorf("%s: error %v, RoomView's %v", room, errs[i], err)
		}
		if !reflect.DeepEqual(views[i], v) {
			t.Errorf("%s: %+v, RoomView's %+v", room, views[i], v)
		}
	}
	if !errors.Is(errs[1], ranking.ErrUnknownRoom) {
		t.Fatalf("unknown room: %v", errs[1])
	}
	if views[0].Room != "r3" || len(views[0].Stable) != 1 || views[2].Room != "r1" || len(views[2].Raw) != 2 {
		t.Fatalf("views %+v", views)
	}
}
