package sink_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

var base = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC).UnixMilli()

func newSink(t *testing.T, c redis.UniversalClient) *sink.Store {
	t.Helper()
	s, err := sink.New(c, sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, TopN: 7, RoomTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func randomEvent(r *rand.Rand, room string) codec.Event {
	ev := codec.Event{RoomID: room, UserID: fmt.Sprintf("u%d", r.IntN(12)), TS: base + r.Int64N(50)}
	switch r.IntN(9) {
	case 7:
		ev.Type, ev.Value = codec.TypeScreenShare, r.Int64N(2)
	case 8:
		ev.Type, ev.Value = codec.TypeSpotlight, r.Int64N(2)
	case 0:
		ev.Type = codec.TypeJoin
	case 1:
		ev.Type = codec.TypeLeave
	case 2:
		ev.Type, ev.Value = codec.TypeAudio, r.Int64N(2)
	case 3:
		ev.Type, ev.Value = codec.TypeVideo, r.Int64N(2)
	case 4:
		ev.Type, ev.Value = codec.TypeRole, 1+r.Int64N(7)
	default:
		ev.Type, ev.Value = codec.TypeVolume, r.Int64N(1000)
	}
	return ev
}

// TestApplyMatchesGoMerge checks that the Lua script merges member states
// exactly as MemberState does, and scores ranked members exactly as the codec
// does, whatever the split of events into batches and parts.
func TestApplyMatchesGoMerge(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	meeting := codec.NewMeeting(codec.DefaultEpoch)
	r := rand.New(rand.NewPCG(1, 2))
	for room := 0; room < 20; room++ {
		roomID := fmt.Sprintf("room-%d", room)
		want := map[string]*ranking.MemberState{}
		offset := int64(0)
		for batch := 0; batch < 5; batch++ {
			var parts []ranking.Part
			for part := 0; part < 1+r.IntN(3); part++ {
				fold := map[string]*ranking.MemberState{}
				for e := 0; e < r.IntN(30); e++ {
					ev := randomEvent(r, roomID)
					if fold[ev.UserID] == nil {
						fold[ev.UserID] = new(ranking.MemberState)
					}
					fold[ev.UserID].Apply(&ev)
					if want[ev.UserID] == nil {
						want[ev.UserID] = new(ranking.MemberState)
					}
					want[ev.UserID].Apply(&ev)
				}
				offset++
				p := ranking.Part{Topic: "test.callbacks.rtc", Partition: int32(part), Last: offset}
				for u, st := range fold {
					p.Members = append(p.Members, ranking.MemberUpdate{UserID: u, State: *st})
				}
				parts = append(parts, p)
			}
			if _, err := s.Apply(ctx, []ranking.RoomUpdate{{Room: roomID, Parts: parts}}, nil); err != nil {
				t.Fatal(err)
			}
		}
		k := sink.RoomKeys("test", roomID)
		stored, err := c.HGetAll(ctx, k.Members).Result()
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) != len(want) {
			t.Fatalf("%s: %d members stored, want %d", roomID, len(stored), len(want))
		}
		for u, w := range want {
			var got ranking.MemberState
			if err := got.UnmarshalBinary([]byte(stored[u])); err != nil {
				t.Fatal(err)
			}
			if got != *w {
				t.Fatalf("%s/%s: Redis state %+v, Go state %+v", roomID, u, got, *w)
			}
			score, err := c.ZScore(ctx, k.Ranking, u).Result()
			if !w.Ranked() {
				if err != redis.Nil {
					t.Fatalf("%s/%s: not ranked but has score %v (%v)", roomID, u, score, err)
				}
				continue
			}
			ws, _ := w.Score(meeting)
			if err != nil || score != ws {
				t.Fatalf("%s/%s: score %v (%v), want %v", roomID, u, score, err, ws)
			}
		}
	}
}

func update(room, user string, part int32, last int64, evs ...codec.Event) ranking.RoomUpdate {
	var st ranking.MemberState
	for i := range evs {
		evs[i].RoomID, evs[i].UserID = room, user
		st.Apply(&evs[i])
	}
	return ranking.RoomUpdate{Room: room, Parts: []ranking.Part{{
		Topic: "test.callbacks.rtc", Partition: part, Last: last,
		Members: []ranking.MemberUpdate{{UserID: user, State: st}},
	}}}
}

// TestWatermarkSkipsApplied shows the exactly-once guard: a part at or below
// the room's watermark for its partition changes nothing, even with content
// that would otherwise win (as a zombie consumer's stale batch might).
func TestWatermarkSkipsApplied(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	vol := func(v int64, ts int64) codec.Event { return codec.Event{Type: codec.TypeVolume, Value: v, TS: ts} }

	st, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 0, 10, vol(100, base))}, nil)
	if err != nil || !st[0].Applied || len(st[0].Top) != 1 {
		t.Fatalf("first apply: %+v, %v", st, err)
	}
	before := st[0].Top[0].Score
	// Same partition, offset not beyond the watermark, newer content: skipped.
	st, err = s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 0, 10, vol(900, base+1000))}, nil)
	if err != nil || st[0].Applied || st[0].Top[0].Score != before {
		t.Fatalf("replayed part was applied: %+v, %v", st, err)
	}
	// Another partition has its own watermark.
	st, err = s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 1, 3, vol(900, base+1000))}, nil)
	if err != nil || !st[0].Applied || st[0].Top[0].Score == before {
		t.Fatalf("new partition's part not applied: %+v, %v", st, err)
	}
	wm, _ := c.HGetAll(ctx, sink.RoomKeys("test", "r1").Stable).Result()
	if !(wm["test.callbacks.rtc/0"] == "10" && wm["test.callbacks.rtc/1"] == "3") {
		t.Fatalf("watermarks %v", wm)
	}
}

// TestApplyRefusesOtherStateFormats: a stored member state that is not of
// format version 2 (here the 35-byte format 1 of unreleased commits) fails
// the apply that reads it with an error saying so, whether the room is
// merged into or re-scored whole.
func TestApplyRefusesOtherStateFormats(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	v1 := string(append([]byte{1, 0, ranking.PresenceIn, byte(codec.RoleHost), 1, 0, 2}, make([]byte, 8+5*4)...))
	vol := codec.Event{Type: codec.TypeVolume, Value: 100, TS: base}
	for _, room := range []string{"merged", "rescored"} {
		k := sink.RoomKeys("test", room)
		if err := c.HSet(ctx, k.Members, "a", v1).Err(); err != nil {
			t.Fatal(err)
		}
		if room == "merged" { // scored under the sink's rules: no re-scoring
			c.HSet(ctx, k.Stable, "r", codec.NewMeeting(codec.DefaultEpoch).Version())
		}
		_, err := s.Apply(ctx, []ranking.RoomUpdate{update(room, "a", 0, 1, vol)}, nil)
		if err == nil || !strings.Contains(err.Error(), "not of format version 2") {
			t.Fatalf("%s: apply over a format 1 state: %v, want an error naming format version 2", room, err)
		}
	}
}

func TestStableCompareAndSetAndPending(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: 0, List: []string{"a", "b"}, Out: []byte("out-1")}})
	if err != nil || !ok[0] {
		t.Fatalf("first store: %v %v", ok, err)
	}
	ok, err = s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: 0, List: []string{"b"}, Out: []byte("stale")}})
	if err != nil || ok[0] {
		t.Fatalf("store with a stale seq succeeded: %v %v", ok, err)
	}
	st, err := s.Read(ctx, []string{"r1"})
	if err != nil || st[0].Seq != 1 || !slices.Equal(st[0].Stable, []string{"a", "b"}) || string(st[0].Pending) != "out-1" {
		t.Fatalf("read after store: %+v %v", st, err)
	}
	// An ack of an older seq leaves the pending output; the right one clears it.
	if _, err = s.Apply(ctx, nil, []ranking.Ack{{Room: "r1", Seq: 0}}); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Read(ctx, []string{"r1"}); st[0].Pending == nil {
		t.Fatal("ack of another seq cleared the pending output")
	}
	if _, err = s.Apply(ctx, nil, []ranking.Ack{{Room: "r1", Seq: 1}}); err != nil {
		t.Fatal(err)
	}
	if st, _ = s.Read(ctx, []string{"r1"}); st[0].Pending != nil || st[0].Seq != 1 {
		t.Fatalf("after ack: %+v", st[0])
	}
}

// TestScriptsReloaded covers a Redis that lost its script cache (restart,
// failover, SCRIPT FLUSH): the sink loads the scripts and carries on.
func TestScriptsReloaded(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	if _, err := s.Read(ctx, []string{"r1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(ctx, []string{"r1"}); err != nil {
		t.Fatalf("after SCRIPT FLUSH: %v", err)
	}
}

func TestRoomTTL(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 0, 1, codec.Event{Type: codec.TypeJoin, TS: base})}, nil); err != nil {
		t.Fatal(err)
	}
	k := sink.RoomKeys("test", "r1")
	for _, key := range []string{k.Members, k.Ranking, k.Stable} {
		ttl, err := c.PTTL(ctx, key).Result()
		if err != nil || ttl <= 0 || ttl > time.Hour {
			t.Fatalf("%s: ttl %v (%v), want within (0, 1h]", key, ttl, err)
		}
	}
}

// TestClusterSlots runs the sink against a three-master Redis Cluster: every
// script touches keys of one hash tag, so rooms spread over all masters work.
// The first apply reads every room before writing it; the second and third
// plan from the cache and carry acknowledgements. Every call holds one room
// there (a call of several rooms would fail with CROSSSLOT).
func TestClusterSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster start skipped in -short mode")
	}
	ctx := context.Background()
	cl := testenv.StartRedisCluster(t)
	s := newSink(t, cl.Client())
	var acks []ranking.Ack
	for round := int64(1); round <= 3; round++ {
		var ups []ranking.RoomUpdate
		for i := 0; i < 50; i++ {
			ups = append(ups, update(fmt.Sprintf("room-%d", i), "a", 0, round, codec.Event{Type: codec.TypeAudio, Value: round % 2, TS: base + round}))
		}
		st, err := s.Apply(ctx, ups, acks)
		if err != nil {
			t.Fatal(err)
		}
		acks = acks[:0]
		var stable []ranking.StableUpdate
		for i := range st {
			if !st[i].Applied || len(st[i].Top) != 1 {
				t.Fatalf("round %d, room %d: %+v", round, i, st[i])
			}
			stable = append(stable, ranking.StableUpdate{Room: st[i].Room, PrevSeq: st[i].Seq, Version: st[i].Version, List: []string{"a"}, Out: []byte("out")})
			acks = append(acks, ranking.Ack{Room: st[i].Room, Seq: st[i].Seq + 1})
		}
		if ok, err := s.StoreStable(ctx, stable); err != nil || slices.Contains(ok, false) {
			t.Fatalf("round %d: store %v %v", round, ok, err)
		}
	}
	if st := s.CacheStats(); st.Fast != 150 || st.Loaded != 50 {
		t.Fatalf("cache %+v, want 150 writes of which 50 read first (round 1)", st)
	}
}

// applyAlike applies ups with the cached sink and with plain (which keeps
// no states and reads every room first), and fails the test unless every
// room's state is the same on both sides. It returns the cached side's.
func applyAlike(t *testing.T, cached, plain *sink.Store, ups []ranking.RoomUpdate) []ranking.RoomState {
	t.Helper()
	got, err := cached.Apply(context.Background(), ups, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Apply(context.Background(), ups, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !reflect.DeepEqual(norm(got[i]), norm(want[i])) {
			t.Fatalf("%s:\ncached %+v\nplain  %+v", ups[i].Room, got[i], want[i])
		}
	}
	return got
}

// TestFastCallRoomsIndependent applies several cached rooms in one call of
// the fast script, one of which another processor wrote since: that room
// alone is refused, read and written again, the others are written by the
// call, and every room ends as a sink without the cache leaves it.
func TestFastCallRoomsIndependent(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	ref := testenv.StartRedis(t).Client()
	a, other := newSink(t, c), newSink(t, c)
	plain, err := sink.New(ref, sink.Config{Env: "test", TopN: 7, RoomTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rooms := []string{"r1", "r2", "r3", "r4", "r5"}
	apply := func(w *sink.Store, users []string, last int64, vol int64) []ranking.RoomState {
		t.Helper()
		var ups []ranking.RoomUpdate
		for _, room := range rooms {
			for _, user := range users {
				u := update(room, user, 0, last, codec.Event{Type: codec.TypeVolume, Value: vol, TS: base + last})
				if n := len(ups); n > 0 && ups[n-1].Room == room {
					ups[n-1].Parts[0].Members = append(ups[n-1].Parts[0].Members, u.Parts[0].Members...)
					continue
				}
				ups = append(ups, u)
			}
		}
		return applyAlike(t, w, plain, ups)
	}
	apply(a, []string{"x", "y"}, 1, 10) // fills a's cache: read, then written
	// The other processor writes r3 only.
	if _, err := other.Apply(ctx, []ranking.RoomUpdate{update("r3", "z", 0, 2, codec.Event{Type: codec.TypeVolume, Value: 50, TS: base + 2})}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Apply(ctx, []ranking.RoomUpdate{update("r3", "z", 0, 2, codec.Event{Type: codec.TypeVolume, Value: 50, TS: base + 2})}, nil); err != nil {
		t.Fatal(err)
	}
	before := a.CacheStats()
	apply(a, []string{"y"}, 3, 30) // one call of the fast script for the five rooms
	st := a.CacheStats()
	if fast, stale, loaded := st.Fast-before.Fast, st.Stale-before.Stale, st.Loaded-before.Loaded; fast != 5 || stale != 1 || loaded != 1 {
		t.Fatalf("fast %d, stale %d, loaded %d; want 5, 1, 1", fast, stale, loaded)
	}
	for _, room := range rooms {
		if got, want := dumpRoom(t, c, room), dumpRoom(t, ref, room); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s stored:\ncached %v\nplain  %v", room, got, want)
		}
	}
}

// TestRoomTwiceInOneApply gives one apply two updates of a cached room, of
// one partition: the first is planned from the cache, the room is read
// again after the first's write (the plan holds the room) and the second
// planned from that read. Their calls must run in the order of the
// updates: the other way round, the second's watermark would make
// the first look applied already, and its member would be lost.
func TestRoomTwiceInOneApply(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	ref := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	plain, err := sink.New(ref, sink.Config{Env: "test", TopN: 7, RoomTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	vol := func(v, ts int64) codec.Event { return codec.Event{Type: codec.TypeVolume, Value: v, TS: base + ts} }
	batches := [][]ranking.RoomUpdate{
		{update("r1", "x", 0, 1, vol(5, 1)), update("r2", "x", 0, 2, vol(5, 2))},
		{update("r1", "a", 0, 5, vol(10, 5)), update("r2", "y", 0, 6, vol(10, 6)), update("r1", "b", 0, 7, vol(20, 7))},
	}
	for _, b := range batches {
		if _, err := s.Apply(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Apply(ctx, b, nil); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.CacheStats(); st.Fast == 0 {
		t.Fatalf("no room took the fast script: %+v", st)
	}
	for _, room := range []string{"r1", "r2"} {
		if got, want := dumpRoom(t, c, room), dumpRoom(t, ref, room); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s stored:\ncached %v\nplain  %v", room, got, want)
		}
	}
}

// TestStableRefusedAfterRankingChanged covers two processors applying one
// room at once: P reads the raw top-N, Q changes the ranking (and, finding
// the stable list still right, stores nothing), then P tries to store a list
// merged from its stale read. The ranking version makes that store fail, so
// P reads again instead of leaving a stable list that no longer matches the
// ranking.
func TestStableRefusedAfterRankingChanged(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	join := codec.Event{Type: codec.TypeJoin, TS: base}
	p, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 0, 1, join)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{update("r1", "a", 1, 1, codec.Event{Type: codec.TypeLeave, TS: base + 1})}, nil); err != nil {
		t.Fatal(err)
	}
	ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: p[0].Seq, Version: p[0].Version, List: []string{"a"}, Out: []byte("stale")}})
	if err != nil || ok[0] {
		t.Fatalf("stable list from a stale ranking stored: %v %v", ok, err)
	}
	now, _ := s.Read(ctx, []string{"r1"})
	if now[0].Version == p[0].Version || len(now[0].Top) != 0 {
		t.Fatalf("after the leave: %+v", now[0])
	}
	ok, err = s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: now[0].Seq, Version: now[0].Version, List: nil, Out: []byte("fresh")}})
	if err != nil || !ok[0] {
		t.Fatalf("store with a fresh read refused: %v %v", ok, err)
	}
}

// TestLargeRoomInOneApply applies thousands of members of one room in one
// update, first read then written, then, cached, written at once, and then with half of them leaving: each script takes lists longer
// than Lua unpacks at once. The room, and a small room in the same call,
// must end as a sink without the cache leaves them.
func TestLargeRoomInOneApply(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	ref := testenv.StartRedis(t).Client()
	cached := newSink(t, c)
	plain, err := sink.New(ref, sink.Config{Env: "test", TopN: 7, RoomTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const users = 3000
	step := func(last int64, ev func(i int) codec.Event) {
		t.Helper()
		big := ranking.RoomUpdate{Room: "big", Parts: []ranking.Part{{Topic: "test.callbacks.rtc", Partition: 0, Last: last}}}
		for i := range users {
			m := update("big", fmt.Sprintf("u-%d", i), 0, last, ev(i)).Parts[0].Members[0]
			big.Parts[0].Members = append(big.Parts[0].Members, m)
		}
		ups := []ranking.RoomUpdate{big, update("small", "x", 0, last, codec.Event{Type: codec.TypeVolume, Value: last, TS: base + last})}
		applyAlike(t, cached, plain, ups)
	}
	step(1, func(int) codec.Event { return codec.Event{Type: codec.TypeJoin, TS: base + 1} })
	before := cached.CacheStats()
	step(2, func(i int) codec.Event {
		return codec.Event{Type: codec.TypeVolume, Value: int64(i % 1000), TS: base + 2}
	})
	step(3, func(i int) codec.Event {
		if i%2 == 0 {
			return codec.Event{Type: codec.TypeLeave, TS: base + 3}
		}
		return codec.Event{Type: codec.TypeVolume, Value: int64(999 - i%1000), TS: base + 3}
	})
	if fast := cached.CacheStats().Fast - before.Fast; fast != 4 {
		t.Fatalf("%d rooms took the fast script, want 4", fast)
	}
	for _, room := range []string{"big", "small"} {
		if got, want := dumpRoom(t, c, room), dumpRoom(t, ref, room); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s stored differently with the cache", room)
		}
	}
	if n := c.ZCard(ctx, sink.RoomKeys("test", "big").Ranking).Val(); n != users/2 {
		t.Fatalf("%d members ranked, want %d", n, users/2)
	}
}
