package sink_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

// TestStateCacheMatchesUncached is the state cache's differential test. Two
// processors with the cache write one Redis, a sink that keeps no copy (it
// reads every room before writing it, and takes no stable step in the
// apply) writes another, all with the same batches: random events over
// several parts, users beyond the members cap, redelivered batches, stable
// lists stored, rooms expiring. Every RoomState returned and every key
// stored must be the same on both sides, while the cached side really plans
// from its copy and also reads the room again when the other processor
// wrote first.
//
// The capped run keeps rooms small (14 users, a cap of 10); the other
// lets rooms grow past the size up to which the sink ranks the top from
// its cache, so the script's top list is compared too.
//
// The rules run has the second processor rank under other rules (a rolling
// change of --ranking): every room it touches is re-scored under its rules,
// and back when the first one touches it again, on both sides alike.
func TestStateCacheMatchesUncached(t *testing.T) {
	t.Run("capped", func(t *testing.T) { testStateCache(t, 10, 14, nil) })
	t.Run("large", func(t *testing.T) { testStateCache(t, 0, 400, nil) })
	other, err := codec.NewMeetingRules(codec.DefaultEpoch, codec.Rules{codec.RuleVolume, codec.RuleScreenShare, codec.RuleRole})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("rules", func(t *testing.T) { testStateCache(t, 0, 30, other) })
}

// testStateCache runs the differential test; otherRules, when set, is the
// meeting of the second processor (and of its reference).
func testStateCache(t *testing.T, maxMembers, users int, otherRules *codec.Meeting) {
	ctx := context.Background()
	ca := testenv.StartRedis(t).Client()
	cb := testenv.StartRedis(t).Client()
	opts := sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, TopN: 3, RoomTTL: time.Hour, MaxMembers: maxMembers}
	mk := func(c redis.UniversalClient, cache int, m *codec.Meeting, segment int) *sink.Store {
		o := opts
		o.CacheMembers = cache
		o.Meeting = m
		s, err := sink.New(c, o)
		if err != nil {
			t.Fatal(err)
		}
		if segment > 0 {
			sink.SetSegmentRooms(s, segment)
		}
		return s
	}
	// a sends each round trip one room per segment, and refA two: the
	// segments in flight together must change nothing that is compared
	// (a room held twice: TestRoomHeldTwiceAcrossSegments)
	a, other := mk(ca, sink.DefaultCacheMembers, nil, 1), mk(ca, sink.DefaultCacheMembers, otherRules, 0)
	refA, refOther := mk(cb, 0, nil, 2), mk(cb, 0, otherRules, 0)
	rescored := 0 // applies on the cached side that found a room under other rules

	r := rand.New(rand.NewPCG(7, 7))
	const rooms, partitions = 6, 3
	var offsets [partitions]int64
	var past [][]ranking.RoomUpdate
	var acks []ranking.Ack
	done := 0      // rooms merged and stored by the apply
	recreated := 0 // rankings the cached side created again after they emptied
	roomName := func(i int) string { return fmt.Sprintf("room-%d", i) }
	for step := 0; step < 600; step++ {
		var batch []ranking.RoomUpdate
		if len(past) > 0 && r.IntN(10) == 0 {
			batch = past[r.IntN(len(past))] // a redelivery: the watermarks skip it
		} else {
			for room := 0; room < rooms; room++ {
				if r.IntN(2) == 0 {
					continue
				}
				u := ranking.RoomUpdate{Room: roomName(room)}
				for part := 0; part < partitions; part++ {
					if r.IntN(2) == 0 {
						continue
					}
					offsets[part] += 1 + r.Int64N(3)
					p := ranking.Part{Topic: "test.callbacks.rtc", Partition: int32(part), Last: offsets[part]}
					fold := map[string]*ranking.MemberState{}
					var order []string
					for e := 0; e < 1+r.IntN(users/2); e++ {
						ev := randomEvent(r, u.Room)
						ev.UserID = fmt.Sprintf("u%d", r.IntN(users))
						ev.TS += int64(step) * 10
						if fold[ev.UserID] == nil {
							fold[ev.UserID] = new(ranking.MemberState)
							order = append(order, ev.UserID)
						}
						fold[ev.UserID].Apply(&ev)
					}
					for _, user := range order {
						p.Members = append(p.Members, ranking.MemberUpdate{UserID: user, State: *fold[user]})
					}
					u.Parts = append(u.Parts, p)
				}
				if len(u.Parts) > 0 {
					batch = append(batch, u)
				}
			}
			past = append(past, batch)
		}
		// The cached processor merges in the apply (one round trip where it
		// can); the other one and the reference apply, merge and store.
		w, ref := a, refA
		if r.IntN(5) == 0 {
			w, ref = other, refOther
		}
		if otherRules != nil {
			for _, u := range batch {
				want := otherRules.Version()
				if w == a {
					want = codec.NewMeeting(codec.DefaultEpoch).Version()
				}
				if v, err := ca.HGet(ctx, sink.RoomKeys("test", u.Room).Stable, "r").Result(); err == nil && v != want {
					rescored++
				}
			}
		}
		var got []ranking.RoomState
		var merged []ranking.Merged
		var err error
		if w == a {
			got, merged, err = w.ApplyMerge(ctx, batch, acks, ranking.StepFunc(mergeForTest))
		} else {
			got, err = w.Apply(ctx, batch, acks)
			merged = make([]ranking.Merged, len(got))
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range batch {
			k := sink.RoomKeys("test", u.Room)
			if ca.Exists(ctx, k.Ranking).Val() == 1 && cb.Exists(ctx, k.Ranking).Val() == 0 {
				recreated++ // the apply on the cached side created it again
			}
		}
		want, err := ref.Apply(ctx, batch, acks)
		if err != nil {
			t.Fatal(err)
		}
		acks = acks[:0]
		var upsA, upsB []ranking.StableUpdate
		for i := range want {
			if !reflect.DeepEqual(norm(got[i]), norm(want[i])) {
				t.Fatalf("step %d, %s:\ncached %+v\nuncached %+v", step, batch[i].Room, got[i], want[i])
			}
			up, store, _ := mergeForTest(&want[i])
			switch {
			case merged[i].Done:
				done++
				if (merged[i].Update != nil) != store || (store && !reflect.DeepEqual(*merged[i].Update, up)) {
					t.Fatalf("step %d, %s: merged in the apply %+v, want %v %+v", step, batch[i].Room, merged[i].Update, store, up)
				}
			case store:
				upsA = append(upsA, up)
			}
			if store {
				upsB = append(upsB, up)
			}
		}
		if _, err := w.StoreStable(ctx, upsA); err != nil {
			t.Fatal(err)
		}
		if okB, err := ref.StoreStable(ctx, upsB); err != nil || slices.Contains(okB, false) {
			t.Fatalf("step %d: reference store %v %v", step, okB, err)
		}
		// Most outputs are acknowledged with the next batch, some with a
		// seq that is not the pending one.
		for _, u := range upsB {
			if !u.StateOnly && r.IntN(4) != 0 {
				acks = append(acks, ranking.Ack{Room: u.Room, Seq: u.PrevSeq + 1 - int64(r.IntN(2))})
			}
		}

		// Now and then another list is stored on both sides (a member
		// outside the top, often not ranked), from a fresh read.
		if r.IntN(4) == 0 {
			room := roomName(r.IntN(rooms))
			sa, errA := w.Read(ctx, []string{room})
			sb, errB := ref.Read(ctx, []string{room})
			if errA != nil || errB != nil || !reflect.DeepEqual(norm(sa[0]), norm(sb[0])) {
				t.Fatalf("step %d: read %s: %+v %v / %+v %v", step, room, sa, errA, sb, errB)
			}
			list := []string{"u13"}
			for _, m := range sb[0].Top {
				list = append(list, m.UserID)
			}
			up := []ranking.StableUpdate{{Room: room, PrevSeq: sb[0].Seq, Version: sb[0].Version, List: list, Out: []byte("out"), PrevState: sb[0].HState}}
			okA, errA := w.StoreStable(ctx, up)
			okB, errB := ref.StoreStable(ctx, up)
			if errA != nil || errB != nil || !reflect.DeepEqual(okA, okB) {
				t.Fatalf("step %d: store %v %v / %v %v", step, okA, errA, okB, errB)
			}
		}
		if r.IntN(50) == 0 { // a room expires on both sides
			k := sink.RoomKeys("test", roomName(r.IntN(rooms)))
			for _, c := range []*redis.Client{ca, cb} {
				if err := c.Del(ctx, k.Members, k.Ranking, k.Stable).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for room := 0; room < rooms; room++ {
		if da, db := dumpRoom(t, ca, roomName(room)), dumpRoom(t, cb, roomName(room)); !reflect.DeepEqual(da, db) {
			t.Fatalf("%s stored:\ncached %v\nuncached %v", roomName(room), da, db)
		}
		checkOneLayout(t, ca, roomName(room), codec.NewMeeting(codec.DefaultEpoch), otherRules)
		// The cached side refreshes TTLs less often, but no key is ever
		// left without one (a ranking emptied and created again included).
		k := sink.RoomKeys("test", roomName(room))
		for _, key := range []string{k.Members, k.Ranking, k.Stable} {
			if ttl := ca.PTTL(ctx, key).Val(); ttl == -1 {
				t.Fatalf("%s has no TTL", key)
			}
		}
	}
	if recreated == 0 {
		t.Fatal("no ranking was emptied and created again")
	}
	if da, db := dumpDue(t, ca), dumpDue(t, cb); !reflect.DeepEqual(da, db) {
		t.Fatalf("due sets:\ncached %v\nuncached %v", da, db)
	}
	st := a.CacheStats()
	t.Logf("cache: %+v, %d rooms merged in the apply", st, done)
	if done == 0 {
		t.Fatal("no room was merged in the apply")
	}
	if st.Fast == 0 || st.Stale == 0 || st.Loaded == 0 {
		t.Fatalf("the test did not exercise every path: %+v", st)
	}
	if s := refA.CacheStats(); s.Rooms != 0 || s.Members != 0 || s.Loaded != s.Fast {
		t.Fatalf("a sink that keeps no states must hold none and read every room it writes: %+v", s)
	}
	if otherRules != nil && rescored == 0 {
		t.Fatal("no room was touched under other rules than it was scored under")
	}
}

// norm makes two RoomStates comparable: nil and empty slices are alike.
func norm(s ranking.RoomState) ranking.RoomState {
	if len(s.Stable) == 0 {
		s.Stable = nil
	}
	if len(s.StableScores) == 0 {
		s.StableScores = nil
	}
	if len(s.Refused) == 0 {
		s.Refused = nil
	}
	if len(s.Top) == 0 {
		s.Top = nil
	}
	return s
}

// dumpRoom returns every stored field of a room, except the state token.
func dumpRoom(t *testing.T, c *redis.Client, room string) map[string]any {
	t.Helper()
	ctx := context.Background()
	k := sink.RoomKeys("test", room)
	stable := c.HGetAll(ctx, k.Stable).Val()
	delete(stable, "mv")
	return map[string]any{
		"members": c.HGetAll(ctx, k.Members).Val(),
		"ranking": c.ZRangeWithScores(ctx, k.Ranking, 0, -1).Val(),
		"stable":  stable,
	}
}

// mergeForTest is a stable step that is a pure function of the room's
// state, as the processor's is: the raw top (in the stored order while the
// set is the same), a state that comes and goes (stored alone when the list
// stays), and a deadline with the state.
func mergeForTest(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
	list := make([]string, 0, len(st.Top))
	for _, m := range st.Top {
		list = append(list, m.UserID)
	}
	if len(list) == len(st.Stable) && !slices.ContainsFunc(list, func(u string) bool { return !slices.Contains(st.Stable, u) }) {
		list = st.Stable
	}
	state := ""
	if len(st.Top) > 0 && int64(st.Top[0].Score)%3 == 0 {
		state = "s-" + st.Top[0].UserID + fmt.Sprint(len(st.StableScores))
	}
	changed := !slices.Equal(list, st.Stable)
	if !changed && state == st.HState {
		return ranking.StableUpdate{}, false, nil
	}
	u := ranking.StableUpdate{Room: st.Room, PrevSeq: st.Seq, Version: st.Version, List: list,
		PrevState: st.HState, State: state, StateOnly: !changed}
	if changed {
		u.Out = []byte(fmt.Sprintf("%s#%d:%v", st.Room, st.Seq+1, list))
	}
	if state != "" {
		u.Due = base + int64(len(list))
	}
	return u, true, nil
}

// dumpDue returns the due set.
func dumpDue(t *testing.T, c *redis.Client) []redis.Z {
	t.Helper()
	return c.ZRangeWithScores(context.Background(), "rostrum:test:due", 0, -1).Val()
}

// TestStateCacheTTL covers the TTLs on the fast path, which refreshes every
// key only when its last refresh is older than an eighth of the room TTL: a
// write in between leaves the TTLs alone, a ranking that an apply creates
// again (Redis deletes an empty sorted set) gets its TTL at once, and a
// write after an eighth of the TTL refreshes every key.
func TestStateCacheTTL(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	const ttl = 2 * time.Second
	s, err := sink.New(c, sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, TopN: 3, RoomTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	k := sink.RoomKeys("test", "r")
	offset := int64(0)
	apply := func(typ codec.Type) {
		t.Helper()
		offset++
		applyAt(t, s, "r", offset, codec.Event{RoomID: "r", UserID: "a", Type: typ, TS: base + offset})
	}
	apply(codec.TypeJoin) // read, then written: every TTL set
	for _, key := range []string{k.Members, k.Ranking, k.Stable} {
		if err := c.PExpire(ctx, key, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	apply(codec.TypeLeave) // fast: the ranking empties and is deleted
	if n := c.Exists(ctx, k.Ranking).Val(); n != 0 {
		t.Fatalf("ranking still exists after the only member left")
	}
	apply(codec.TypeJoin) // fast: the ranking is created again
	if got := c.PTTL(ctx, k.Ranking).Val(); got <= 0 || got > ttl {
		t.Fatalf("ranking created again has TTL %v, want within (0, %v]", got, ttl)
	}
	if got := c.PTTL(ctx, k.Members).Val(); got <= ttl {
		t.Fatalf("members TTL %v: refreshed although the last refresh was recent", got)
	}
	if st := s.CacheStats(); st.Fast != 3 || st.Loaded != 1 {
		t.Fatalf("cache %+v, want 3 writes, the first read first", st)
	}
	time.Sleep(ttl/8 + 50*time.Millisecond)
	apply(codec.TypeVolume) // fast, after an eighth of the TTL: every key refreshed
	for _, key := range []string{k.Members, k.Ranking, k.Stable} {
		if got := c.PTTL(ctx, key).Val(); got <= 0 || got > ttl {
			t.Fatalf("%s: TTL %v after the periodic refresh, want within (0, %v]", key, got, ttl)
		}
	}
}

// TestRolledBackDetected covers Redis going back in time with its
// generation marker intact (a failover to a replica that missed writes, a
// restored snapshot): a room holding an older token of this processor than
// the one it last wrote makes Apply return ErrRedisRolledBack, after
// applying the batch in full, and the restore of the stable lists replaces
// the older seq.
func TestRolledBackDetected(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	s := newSink(t, c)
	k := sink.RoomKeys("test", "r1")
	keys := []string{k.Members, k.Ranking, k.Stable}
	join := func(user string, offset int64) ranking.RoomUpdate {
		return update("r1", user, 0, offset, codec.Event{Type: codec.TypeJoin, TS: base + offset})
	}
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{join("a", 1)}, nil); err != nil { // read and written: cached
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{join("b", 2)}, nil); err != nil { // fast
		t.Fatal(err)
	}
	store := func(list ...string) { // and publish
		t.Helper()
		st, err := s.Read(ctx, []string{"r1"})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := s.StoreStable(ctx, []ranking.StableUpdate{{Room: "r1", PrevSeq: st[0].Seq, Version: st[0].Version, List: list, Out: []byte("o")}})
		if err != nil || !ok[0] {
			t.Fatalf("store: %v %v", ok, err)
		}
		if _, err := s.Apply(ctx, nil, []ranking.Ack{{Room: "r1", Seq: st[0].Seq + 1}}); err != nil {
			t.Fatal(err)
		}
	}
	store("a", "b") // seq 1
	snap := map[string]string{}
	for _, key := range keys {
		snap[key] = c.Dump(ctx, key).Val()
	}
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{join("c", 3)}, nil); err != nil { // fast: the write Redis will lose
		t.Fatal(err)
	}
	store("a", "b", "c")       // seq 2
	for _, key := range keys { // Redis goes back to the snapshot
		if err := c.RestoreReplace(ctx, key, 0, snap[key]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The apply that finds the rollback applies its batch, but stores no
	// stable list: the room's seq (1) is behind the published one (2), and
	// a list stored now would publish a second seq 2.
	always := ranking.StepFunc(func(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
		return ranking.StableUpdate{List: []string{"d"}, Out: []byte("not to publish")}, true, nil
	})
	_, _, err := s.ApplyMerge(ctx, []ranking.RoomUpdate{join("d", 4)}, nil, always)
	if !errors.Is(err, sink.ErrRedisRolledBack) || !errors.Is(err, ranking.ErrRedisReset) {
		t.Fatalf("apply after the rollback: %v, want ErrRedisRolledBack", err)
	}
	if n := c.HExists(ctx, k.Members, "d").Val(); !n {
		t.Fatal("the apply that found the rollback did not apply its batch")
	}
	if seq := c.HGet(ctx, k.Stable, "seq").Val(); seq != "1" {
		t.Fatalf("the apply that found the rollback stored seq %s", seq)
	}
	if c.HExists(ctx, k.Members, "c").Val() {
		t.Fatal("the lost write is back without a rebuild")
	}
	// The rebuild seeds the stable lists from the last outputs: the older
	// seq (1) is raised to the published one (2); a newer one is kept.
	if n, err := s.RestoreStable(ctx, []ranking.PublishedList{{Room: "r1", Seq: 2, List: []string{"a", "b", "c"}}}); err != nil || n != 1 {
		t.Fatalf("restore over an older seq: %d %v", n, err)
	}
	if n, err := s.RestoreStable(ctx, []ranking.PublishedList{{Room: "r1", Seq: 1, List: []string{"a"}}}); err != nil || n != 0 {
		t.Fatalf("restore over a newer seq: %d %v", n, err)
	}
	st, err := s.Read(ctx, []string{"r1"})
	if err != nil || st[0].Seq != 2 || len(st[0].Stable) != 3 || st[0].Pending != nil {
		t.Fatalf("after the restore: %+v %v", st, err)
	}
	// The cache started over: the next apply is an ordinary one.
	if _, err := s.Apply(ctx, []ranking.RoomUpdate{join("e", 5)}, nil); err != nil {
		t.Fatalf("apply after the rollback was reported: %v", err)
	}
}

// checkOneLayout requires every score of room's ranking to be its member's
// score under the rules version the room records, one of meetings.
func checkOneLayout(t *testing.T, c *redis.Client, room string, meetings ...*codec.Meeting) {
	t.Helper()
	ctx := context.Background()
	k := sink.RoomKeys("test", room)
	v := c.HGet(ctx, k.Stable, "r").Val()
	var m *codec.Meeting
	for _, x := range meetings {
		if x != nil && x.Version() == v {
			m = x
		}
	}
	zs := c.ZRangeWithScores(ctx, k.Ranking, 0, -1).Val()
	if m == nil {
		if len(zs) > 0 {
			t.Fatalf("%s: ranked under unknown rules version %q", room, v)
		}
		return
	}
	states := c.HGetAll(ctx, k.Members).Val()
	for _, z := range zs {
		var s ranking.MemberState
		if err := s.UnmarshalBinary([]byte(states[z.Member.(string)])); err != nil {
			t.Fatal(err)
		}
		if want, err := s.Score(m); err != nil || want != z.Score {
			t.Fatalf("%s: %s scored %.0f, its state under rules %s gives %.0f (%v)", room, z.Member, z.Score, m.Rules(), want, err)
		}
	}
}

// TestRoomWithoutRulesVersionRescored: a room whose stable hash names no
// rules version is re-scored whole from its member states the first time it
// is touched, as one scored under other rules is: here a ranking in the
// layout of LegacyRules, touched by a sink with the default rules and by one
// with LegacyRules itself (whose stale score of bob must go too).
func TestRoomWithoutRulesVersionRescored(t *testing.T) {
	legacy, err := codec.NewMeetingRules(codec.DefaultEpoch, codec.LegacyRules())
	if err != nil {
		t.Fatal(err)
	}
	def := codec.NewMeeting(codec.DefaultEpoch)
	for _, m := range []*codec.Meeting{def, legacy} {
		t.Run(m.Version(), func(t *testing.T) {
			ctx := context.Background()
			c := testenv.StartRedis(t).Client()
			k := sink.RoomKeys("test", "old")
			// ann: audio on, volume 900, guest; bob: audio off, host.
			packed := func(audio uint8, role codec.Role, volume uint16, mx int64) string {
				st := ranking.MemberState{Audio: audio, Presence: ranking.PresenceIn, Role: role, Volume: volume, MaxTS: mx}
				return string(st.AppendBinary(nil))
			}
			ann := packed(1, codec.RoleGuest, 900, base+10)
			sa, _ := legacy.Encode(codec.MemberScore{Audio: 1, Volume: 900, Role: codec.RoleGuest, TS: base + 10})
			c.HSet(ctx, k.Members, "ann", ann, "bob", packed(0, codec.RoleHost, 0, base+20))
			c.ZAdd(ctx, k.Ranking, redis.Z{Score: sa, Member: "ann"}, redis.Z{Score: 1, Member: "bob"})
			c.HSet(ctx, k.Stable, "seq", 1, "list", "ann,bob")

			s, err := sink.New(c, sink.Config{Env: "test", CacheMembers: sink.DefaultCacheMembers, TopN: 7, RoomTTL: time.Hour, Meeting: m})
			if err != nil {
				t.Fatal(err)
			}
			ev := codec.Event{RoomID: "old", UserID: "carl", Type: codec.TypeJoin, TS: base + 30}
			var up ranking.MemberState
			up.Apply(&ev)
			if _, err := s.Apply(ctx, []ranking.RoomUpdate{{Room: "old", Parts: []ranking.Part{{Topic: "t", Partition: 0, Last: 1,
				Members: []ranking.MemberUpdate{{UserID: "carl", State: up}}}}}}, nil); err != nil {
				t.Fatal(err)
			}
			checkOneLayout(t, c, "old", m)
			if v := c.HGet(ctx, k.Stable, "r").Val(); v != m.Version() {
				t.Fatalf("rules version %q, want %q", v, m.Version())
			}
			if n := c.ZCard(ctx, k.Ranking).Val(); n != 3 {
				t.Fatalf("%d ranked, want ann, bob and carl", n)
			}
			// ann's state was only read, never rewritten.
			if b := c.HGet(ctx, k.Members, "ann").Val(); b != ann {
				t.Fatalf("ann's state is %x, want %x", b, ann)
			}
		})
	}
}

// TestRoomHeldTwiceAcrossSegments applies batches that hold a room twice,
// its two updates in consecutive segments of one room each: the first is
// planned and the second read while both segments are in flight, so the
// read may run before or after the write. Either way the second update must
// be written after the first (the same partition's later offset: written
// first, it would make the first one look redelivered and skip it), and
// every room must end as a sink that applies the updates one batch at a
// time leaves it.
func TestRoomHeldTwiceAcrossSegments(t *testing.T) {
	ctx := context.Background()
	c, ref := testenv.StartRedis(t).Client(), testenv.StartRedis(t).Client()
	seg := newSink(t, c)
	sink.SetSegmentRooms(seg, 1)
	plain := newSink(t, ref)
	r := rand.New(rand.NewPCG(3, 5))
	var offset int64
	upd := func(room string, part int32) ranking.RoomUpdate {
		offset++
		ev := randomEvent(r, room)
		ev.TS += offset
		return update(room, ev.UserID, part, offset, ev)
	}
	for step := 0; step < 200; step++ {
		part := int32(r.IntN(2))
		batch := []ranking.RoomUpdate{upd("twice", 0), upd("twice", part), upd("other", 0), upd("twice", 1)}
		if _, err := seg.Apply(ctx, batch, nil); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		for i := range batch {
			if _, err := plain.Apply(ctx, batch[i:i+1], nil); err != nil {
				t.Fatalf("step %d, reference: %v", step, err)
			}
		}
		for _, room := range []string{"twice", "other"} {
			if got, want := dumpRoom(t, c, room), dumpRoom(t, ref, room); !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, room %s:\nsegments %v\none by one %v", step, room, got, want)
			}
		}
	}
	if trips, segments := seg.TripStats(); segments <= trips {
		t.Fatalf("%d segments over %d round trips: the batches were not split", segments, trips)
	}
}
