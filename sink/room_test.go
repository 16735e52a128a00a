package sink

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/ranking"
)

// roomTS is a time inside the default meeting's score window.
var roomTS = codec.DefaultEpoch.UnixMilli() + 1_000_000

// testPlanner returns a planner with the default meeting, top lists of
// topN and a members cap of maxMembers (0: none).
func testPlanner(topN, maxMembers int) *roomPlanner {
	return &roomPlanner{roomConfig: roomConfig{topN: topN, topMax: goTopMax, maxMembers: maxMembers,
		meeting: codec.NewMeeting(codec.DefaultEpoch)}}
}

// stateOf returns the member state that evs build.
func stateOf(evs ...codec.Event) ranking.MemberState {
	var s ranking.MemberState
	for i := range evs {
		s.Apply(&evs[i])
	}
	return s
}

// ev returns an event of type typ with value at roomTS+dt.
func ev(typ codec.Type, value, dt int64) codec.Event {
	return codec.Event{Type: typ, Value: value, TS: roomTS + dt}
}

// mu returns user's update built from evs.
func mu(user string, evs ...codec.Event) ranking.MemberUpdate {
	return ranking.MemberUpdate{UserID: user, State: stateOf(evs...)}
}

// roomUpdate returns an update of room "r" with one part per members list.
func roomUpdate(parts ...[]ranking.MemberUpdate) ranking.RoomUpdate {
	u := ranking.RoomUpdate{Room: "r"}
	for i, ms := range parts {
		u.Parts = append(u.Parts, ranking.Part{Topic: "t", Partition: int32(i), Last: 1, Members: ms})
	}
	return u
}

// users returns the users of changes.
func users(changed []memberChange) []string {
	var out []string
	for _, c := range changed {
		out = append(out, c.user)
	}
	return out
}

// mustPlan plans u on m and fails the test on an error.
func mustPlan(t *testing.T, m *roomModel, u ranking.RoomUpdate, p *roomPlanner) roomPlan {
	t.Helper()
	rp, err := m.plan(&u, 0, nil, p)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// checkRanked fails the test unless m.ranked counts m's ranked members.
func checkRanked(t *testing.T, m *roomModel) {
	t.Helper()
	n := 0
	for _, mem := range m.list {
		if mem.score != ranking.Unranked {
			n++
		}
	}
	if m.ranked != n {
		t.Fatalf("ranked = %d, the list holds %d ranked members", m.ranked, n)
	}
}

// TestRoomPlanMergesUpdates checks that a member's updates from several
// parts are merged with MemberState.Merge into its state, and reported once,
// in order of first appearance, with its position and score.
func TestRoomPlanMergesUpdates(t *testing.T) {
	p := testPlanner(3, 0)
	var m roomModel
	mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeJoin, 0, 0))}), p)

	a := []ranking.MemberUpdate{mu("u1", ev(codec.TypeVolume, 500, 10)), mu("u2", ev(codec.TypeJoin, 0, 1))}
	b := []ranking.MemberUpdate{mu("u2", ev(codec.TypeVolume, 40, 3)), mu("u1", ev(codec.TypeAudio, 1, 5))}
	old := m.list[0].state
	rp := mustPlan(t, &m, roomUpdate(a, b), p)
	if got := users(rp.changed); !slices.Equal(got, []string{"u1", "u2"}) {
		t.Fatalf("changed %v, want [u1 u2]", got)
	}
	want1 := old
	want1.Merge(&a[0].State)
	want1.Merge(&b[1].State)
	want2 := a[1].State
	want2.Merge(&b[0].State)
	for i, want := range []ranking.MemberState{want1, want2} {
		c := rp.changed[i]
		if c.state != want || c.at != i || c.added != (i == 1) {
			t.Fatalf("change %d = %+v, want state %+v at %d", i, c, want, i)
		}
		score, err := want.Score(p.meeting)
		if err != nil {
			t.Fatal(err)
		}
		if c.score != score || !c.isRanked() {
			t.Fatalf("%s scores %v, want %v", c.user, c.score, score)
		}
		if mem := m.list[m.get(c.user)]; mem.state != want || mem.score != score {
			t.Fatalf("the room holds %+v for %s, want the plan's state", mem, c.user)
		}
	}
	if len(rp.refused) != 0 {
		t.Fatalf("refused %v without a cap", rp.refused)
	}
	checkRanked(t, &m)
}

// TestRoomPlanMembersCap checks that the members cap refuses new users in
// order of their first update, keeps existing members changing, and that a
// leave frees no slot.
func TestRoomPlanMembersCap(t *testing.T) {
	p := testPlanner(3, 3)
	var m roomModel
	join := func(user string, dt int64) ranking.MemberUpdate { return mu(user, ev(codec.TypeJoin, 0, dt)) }
	mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{join("u1", 0), join("u2", 0)}), p)

	rp := mustPlan(t, &m, roomUpdate(
		[]ranking.MemberUpdate{join("u5", 1), join("u3", 1), mu("u1", ev(codec.TypeVolume, 9, 1))},
		[]ranking.MemberUpdate{join("u4", 2), join("u5", 2)},
	), p)
	if !slices.Equal(rp.refused, []string{"u3", "u4"}) {
		t.Fatalf("refused %v, want [u3 u4]", rp.refused)
	}
	if got := users(rp.changed); !slices.Equal(got, []string{"u5", "u1"}) {
		t.Fatalf("changed %v, want [u5 u1]", got)
	}
	if len(m.list) != 3 || m.get("u5") != 2 {
		t.Fatalf("room holds %d members, u5 at %d; want 3, u5 at 2", len(m.list), m.get("u5"))
	}

	rp = mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeLeave, 0, 5)), join("u6", 5)}), p)
	if !slices.Equal(rp.refused, []string{"u6"}) || !slices.Equal(users(rp.changed), []string{"u1"}) {
		t.Fatalf("after a leave: refused %v, changed %v; want [u6], [u1]", rp.refused, users(rp.changed))
	}
	if rp.changed[0].isRanked() {
		t.Fatal("a member who left is ranked")
	}
	checkRanked(t, &m)
}

// TestRoomPlanUnchangedNotReported checks that an update that leaves a
// member's stored state as it is reports nothing: the same update again,
// and one older than every register it writes.
func TestRoomPlanUnchangedNotReported(t *testing.T) {
	p := testPlanner(3, 0)
	var m roomModel
	u := roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeVolume, 300, 10)), mu("u2", ev(codec.TypeLeave, 0, 10))})
	if rp := mustPlan(t, &m, u, p); len(rp.changed) != 2 {
		t.Fatalf("first update changed %v, want both", users(rp.changed))
	}
	for name, again := range map[string]ranking.RoomUpdate{
		"same":  u,
		"older": roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeVolume, 999, 2)), mu("u2", ev(codec.TypeJoin, 0, 2))}),
	} {
		if rp := mustPlan(t, &m, again, p); len(rp.changed) != 0 || len(rp.refused) != 0 {
			t.Fatalf("%s update: changed %v, refused %v; want none", name, users(rp.changed), rp.refused)
		}
	}
	// A new member is reported even when its update brings nothing: the
	// room must store it.
	rp := mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{{UserID: "u3"}}), p)
	if !slices.Equal(users(rp.changed), []string{"u3"}) || !rp.changed[0].added {
		t.Fatalf("an empty update of a new member changed %+v", rp.changed)
	}
}

// TestRoomTopOrder checks the top's order (score descending, equal scores
// by user id descending, as better and ZREVRANGE order them), its length,
// and that unranked members are left out.
func TestRoomTopOrder(t *testing.T) {
	p := testPlanner(4, 0)
	var m roomModel
	same := func(user string) ranking.MemberUpdate { return mu(user, ev(codec.TypeJoin, 0, 0)) }
	rp := mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{
		same("b"), same("d"), mu("z", ev(codec.TypeLeave, 0, 0)), same("a"),
		mu("loud", ev(codec.TypeVolume, 800, 0)), same("c"), mu("host", ev(codec.TypeRole, int64(codec.RoleHost), 0)),
	}), p)
	if !rp.hasTop {
		t.Fatal("a small room's plan has no top")
	}
	var got []string
	for _, r := range rp.top {
		got = append(got, r.UserID)
	}
	if want := []string{"loud", "host", "d", "c"}; !slices.Equal(got, want) {
		t.Fatalf("top %v, want %v", got, want)
	}
	for i := 1; i < len(rp.top); i++ {
		if better(rp.top[i].Score, rp.top[i].UserID, &rp.top[i-1]) {
			t.Fatalf("top %v out of order at %d", rp.top, i)
		}
	}
	if all := m.top(nil, 10); len(all) != 6 {
		t.Fatalf("the ranking holds %d members, want 6 (z left)", len(all))
	}
}

// TestRoomPlanStableStep checks the state the stable step is taken on (the
// new top, the stable members' scores, the ranking version counting the
// update, the refused users), the update it returns, and when the step is
// not taken.
func TestRoomPlanStableStep(t *testing.T) {
	p := testPlanner(3, 2)
	var m roomModel
	mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeJoin, 0, 0)), mu("u2", ev(codec.TypeJoin, 0, 0))}), p)
	m.stable = roomStable{known: true, seq: 3, list: []string{"u2", "gone", "u1"}, version: 5, state: "h"}

	var seen *ranking.RoomState
	step := ranking.StepFunc(func(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
		seen = st
		return ranking.StableUpdate{List: []string{"u1"}, State: "h2"}, true, nil
	})
	u := roomUpdate([]ranking.MemberUpdate{mu("u1", ev(codec.TypeLeave, 0, 5)), mu("u3", ev(codec.TypeJoin, 0, 5))})
	rp, err := m.plan(&u, 0, step, p)
	if err != nil {
		t.Fatal(err)
	}
	if rp.merged == nil || rp.merged != seen {
		t.Fatalf("merged %p, the step saw %p", rp.merged, seen)
	}
	st := rp.merged
	u2 := m.list[m.get("u2")].score
	if st.Room != "r" || st.Seq != 3 || st.Version != 6 || st.HState != "h" || !slices.Equal(st.Refused, []string{"u3"}) ||
		!slices.Equal(st.StableScores, []float64{u2, ranking.Unranked, ranking.Unranked}) ||
		!slices.Equal(st.Top, []ranking.Ranked{{UserID: "u2", Score: u2}}) {
		t.Fatalf("the step saw %+v", *st)
	}
	if up := rp.update; up == nil || up.Room != "r" || up.PrevSeq != 3 || up.Version != 6 || up.PrevState != "h" || up.State != "h2" {
		t.Fatalf("update %+v", rp.update)
	}

	// Nothing changes: the version stays; the step stores nothing.
	nothing := ranking.StepFunc(func(st *ranking.RoomState) (ranking.StableUpdate, bool, error) {
		return ranking.StableUpdate{}, false, nil
	})
	if rp, err = m.plan(&u, 0, nothing, p); err != nil || rp.merged == nil || rp.merged.Version != 5 || rp.update != nil {
		t.Fatalf("unchanged room: merged %+v, update %+v, %v", rp.merged, rp.update, err)
	}

	for name, tc := range map[string]struct {
		pending, acked int64
		unknown, read  bool
		topMax         int
		want           bool
	}{
		"pending":       {pending: 3, want: false},
		"pending acked": {pending: 3, acked: 3, want: true},
		"unknown":       {unknown: true, want: false},
		"read":          {read: true, want: false},
		"no top":        {topMax: 1, want: false},
	} {
		m.stable.pending, m.stable.known = tc.pending, !tc.unknown
		q := testPlanner(3, 2)
		if tc.topMax > 0 {
			q.topMax = tc.topMax
		}
		v := u
		if tc.read {
			v.Parts = nil
		}
		rp, err := m.plan(&v, tc.acked, nothing, q)
		if err != nil {
			t.Fatal(err)
		}
		if (rp.merged != nil) != tc.want {
			t.Errorf("%s: step taken %t, want %t", name, rp.merged != nil, tc.want)
		}
		if rp.hasTop != (tc.topMax == 0) || (rp.top == nil) == rp.hasTop {
			t.Errorf("%s: hasTop %t with top %v", name, rp.hasTop, rp.top)
		}
	}
}

// TestRoomPlanMatchesModel is the room model's property test: random
// meeting events, delivered in batches over several parts and redelivered
// at random, planned room by room, must leave every room's member states,
// ranking and top as the reference model (internal/testkit/model) has them,
// and each plan must report exactly the members whose state changed.
func TestRoomPlanMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testRoomPlanMatchesModel(t, seed) })
	}
}

func testRoomPlanMatchesModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0))
	const topN = 5
	p := testPlanner(topN, 0)
	ref := model.New(p.meeting)
	rooms := map[string]*roomModel{}
	var sent [][]codec.Event
	for batch := 0; batch < 40; batch++ {
		var evs []codec.Event
		if len(sent) > 0 && rng.IntN(4) == 0 {
			evs = sent[rng.IntN(len(sent))] // redelivered: changes nothing
		} else {
			for range 1 + rng.IntN(30) {
				evs = append(evs, randomEvent(rng))
			}
			sent = append(sent, evs)
		}
		for _, e := range evs {
			ref.Apply(e)
		}
		for room, u := range batchUpdates(rng, evs) {
			m := rooms[room]
			if m == nil {
				m = &roomModel{}
				rooms[room] = m
			}
			before := slices.Clone(m.list)
			rp, err := m.plan(&u, 0, nil, p)
			if err != nil {
				t.Fatal(err)
			}
			checkChanged(t, before, m, rp.changed)
			checkRoom(t, ref, room, m, rp.top, topN)
		}
	}
}

// randomEvent returns a meeting event of one of three rooms and six users,
// at one of a few hundred milliseconds, so that ties of time and of score
// are common.
func randomEvent(rng *rand.Rand) codec.Event {
	types := []codec.Type{codec.TypeJoin, codec.TypeLeave, codec.TypeAudio, codec.TypeVideo, codec.TypeVolume,
		codec.TypeRole, codec.TypeScreenShare, codec.TypeSpotlight}
	e := codec.Event{RoomID: fmt.Sprintf("r-%d", rng.IntN(3)), UserID: fmt.Sprintf("u-%d", rng.IntN(6)),
		Type: types[rng.IntN(len(types))], TS: roomTS + rng.Int64N(300)}
	switch e.Type {
	case codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare, codec.TypeSpotlight:
		e.Value = rng.Int64N(2)
	case codec.TypeVolume:
		e.Value = rng.Int64N(4) * 333
	case codec.TypeRole:
		e.Value = []int64{int64(codec.RoleStudent), int64(codec.RoleHost), int64(codec.RoleAssistant)}[rng.IntN(3)]
	}
	return e
}

// batchUpdates folds a batch's events into one update per room, each event
// in one of three parts at random, as the processor folds a batch read from
// three partitions.
func batchUpdates(rng *rand.Rand, evs []codec.Event) map[string]ranking.RoomUpdate {
	type key struct {
		room, user string
		part       int
	}
	states := map[key]*ranking.MemberState{}
	var order []key
	for i := range evs {
		k := key{evs[i].RoomID, evs[i].UserID, rng.IntN(3)}
		if states[k] == nil {
			states[k] = new(ranking.MemberState)
			order = append(order, k)
		}
		states[k].Apply(&evs[i])
	}
	out := map[string]ranking.RoomUpdate{}
	for _, k := range order {
		u := out[k.room]
		u.Room = k.room
		for len(u.Parts) <= k.part {
			u.Parts = append(u.Parts, ranking.Part{Topic: "t", Partition: int32(len(u.Parts)), Last: 1})
		}
		u.Parts[k.part].Members = append(u.Parts[k.part].Members, ranking.MemberUpdate{UserID: k.user, State: *states[k]})
		out[k.room] = u
	}
	return out
}

// checkChanged fails the test unless changed lists exactly the members whose
// state or score differs between before and m, each with m's state.
func checkChanged(t *testing.T, before []roomMember, m *roomModel, changed []memberChange) {
	t.Helper()
	var want []string
	for i, mem := range m.list {
		if i >= len(before) || before[i] != mem {
			want = append(want, mem.user)
		}
	}
	got := users(changed)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("changed %v, want %v", got, want)
	}
	for _, c := range changed {
		if mem := m.list[c.at]; mem.user != c.user || mem.state != c.state || mem.score != c.score {
			t.Fatalf("change %+v, the room holds %+v", c, mem)
		}
	}
	checkRanked(t, m)
}

// checkRoom fails the test unless m's states and ranking, and its plan's
// top of n, are the reference model's.
func checkRoom(t *testing.T, ref *model.Model, room string, m *roomModel, top []ranking.Ranked, n int) {
	t.Helper()
	for _, mem := range m.list {
		rs, ok := ref.State(room, mem.user)
		if !ok {
			t.Fatalf("%s/%s is not in the reference model", room, mem.user)
		}
		want := ranking.MemberState{
			Audio: uint8(rs.Audio.Value), AudioTS: rs.Audio.TS, Volume: uint16(rs.Volume.Value), VolumeTS: rs.Volume.TS,
			Video: uint8(rs.Video.Value), VideoTS: rs.Video.TS, Role: codec.Role(rs.Role.Value), RoleTS: rs.Role.TS,
			ScreenShare: uint8(rs.ScreenShare.Value), ScreenShareTS: rs.ScreenShare.TS,
			Spotlight: uint8(rs.Spotlight.Value), SpotlightTS: rs.Spotlight.TS,
			Presence: uint8(rs.Presence.Value), PresenceTS: rs.Presence.TS, MaxTS: rs.Time,
		}
		if got := mem.state.Effective(); got != want {
			t.Fatalf("%s/%s: state %+v, reference %+v", room, mem.user, got, want)
		}
	}
	var want []ranking.Ranked
	for _, r := range ref.Ranking(room) {
		want = append(want, ranking.Ranked{UserID: r.UserID, Score: r.Score})
	}
	if got := m.top(nil, len(m.list)); !slices.Equal(got, want) {
		t.Fatalf("%s: ranking %v, reference %v", room, got, want)
	}
	if !slices.Equal(top, want[:min(n, len(want))]) {
		t.Fatalf("%s: top %v, reference %v", room, top, want)
	}
}

// TestRoomPlanRescore checks the plan of a room whose stored ranking was
// scored under other rules: the first plan of the room with members holds
// every member, changed or not, with its score under the model's rules,
// and says that it rebuilds the ranking; the next plan is an ordinary one.
// An empty room keeps the mark until it has members.
func TestRoomPlanRescore(t *testing.T) {
	p := testPlanner(3, 0)
	m := roomModel{rescore: true}
	rp := mustPlan(t, &m, ranking.RoomUpdate{Room: "r"}, p)
	if rp.rebuilt || !m.rescore {
		t.Fatalf("an empty room rebuilt %v, kept the mark %v; want false, true", rp.rebuilt, m.rescore)
	}
	join := func(user string, dt int64) ranking.MemberUpdate { return mu(user, ev(codec.TypeJoin, 0, dt)) }
	mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{join("u1", 0), join("u2", 0), join("u3", 0)}), p)
	m.rescore = true // as a read of a room scored under other rules leaves it
	rp = mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("u2", ev(codec.TypeVolume, 7, 1))}), p)
	if !rp.rebuilt || m.rescore {
		t.Fatalf("rebuilt %v, mark kept %v; want true, false", rp.rebuilt, m.rescore)
	}
	if got := users(rp.changed); !slices.Equal(got, []string{"u2", "u1", "u3"}) {
		t.Fatalf("changed %v, want [u2 u1 u3]: the update's member, then every other", got)
	}
	for _, c := range rp.changed {
		want, err := scoreOf(&m.list[c.at].state, p.meeting)
		if err != nil || c.score != want || m.list[c.at].user != c.user {
			t.Fatalf("%s at %d: score %v, the room's %v (%v)", c.user, c.at, c.score, want, err)
		}
	}
	rp = mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("u3", ev(codec.TypeVolume, 9, 2))}), p)
	if rp.rebuilt || !slices.Equal(users(rp.changed), []string{"u3"}) {
		t.Fatalf("after the rebuild: rebuilt %v, changed %v; want false, [u3]", rp.rebuilt, users(rp.changed))
	}
}

// TestUnappliedParts checks what a plan made from a read leaves out: the
// parts at or below their watermarks (an overlapping part is kept whole)
// and, with a members cap, reports the users of those parts that are not
// members, once each.
func TestUnappliedParts(t *testing.T) {
	lr := &loadedRoom{cr: &cachedRoom{}, marks: []int64{5, -1, 9}}
	lr.cr.add("member", ranking.MemberState{}, ranking.Unranked)
	u := &ranking.RoomUpdate{Room: "r", Parts: []ranking.Part{
		{Partition: 0, Last: 5, Members: []ranking.MemberUpdate{{UserID: "member"}, {UserID: "new"}}},
		{Partition: 1, Last: 3, Members: []ranking.MemberUpdate{{UserID: "a"}}},
		{Partition: 2, Last: 8, Members: []ranking.MemberUpdate{{UserID: "new"}, {UserID: "other"}}},
	}}
	got, refused := lr.unapplied(u, true)
	if len(got.Parts) != 1 || got.Parts[0].Partition != 1 {
		t.Fatalf("parts kept %+v, want partition 1 only", got.Parts)
	}
	if !slices.Equal(refused, []string{"new", "other"}) {
		t.Fatalf("refused %v, want [new other]", refused)
	}
	if _, refused := lr.unapplied(u, false); refused != nil {
		t.Fatalf("without a cap refused %v", refused)
	}
	lr.marks = []int64{4, 2, 7} // every part above (or overlapping) its watermark
	if got, _ := lr.unapplied(u, true); got != u {
		t.Fatal("an update with nothing to leave out was copied")
	}
}

// TestRoomPlanPartial checks the plan of a large room read in part: the
// model holds two of the room's ten members. The members cap counts the
// ten, a new member takes the next position of the model's list, and the
// plan leaves the top to the ranking in Redis.
func TestRoomPlanPartial(t *testing.T) {
	p := testPlanner(3, 11)
	m := roomModel{partial: true, count: 10}
	join := func(user string, dt int64) ranking.MemberUpdate { return mu(user, ev(codec.TypeJoin, 0, dt)) }
	m.add("a", stateOf(ev(codec.TypeJoin, 0, 0)), 1)
	m.add("b", stateOf(ev(codec.TypeJoin, 0, 0)), 2)
	rp := mustPlan(t, &m, roomUpdate([]ranking.MemberUpdate{mu("b", ev(codec.TypeVolume, 5, 1)), join("new", 1), join("late", 1)}), p)
	if !slices.Equal(rp.refused, []string{"late"}) {
		t.Fatalf("refused %v, want [late]: the cap counts the room's ten members, not the model's two", rp.refused)
	}
	if got := users(rp.changed); !slices.Equal(got, []string{"b", "new"}) || rp.changed[1].at != 2 || !rp.changed[1].added {
		t.Fatalf("changed %v (new at %d), want [b new] with new at 2", got, rp.changed[len(rp.changed)-1].at)
	}
	if rp.hasTop {
		t.Fatal("a room read in part ranked its top")
	}
	if m.size() != 11 || len(m.list) != 3 {
		t.Fatalf("size %d, list %d; want 11 and 3", m.size(), len(m.list))
	}
}
