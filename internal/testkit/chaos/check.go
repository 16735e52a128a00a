package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
)

// Report is what Check found.
type Report struct {
	Rooms, Members, Ranked int // in the model
	Outputs, OutputRooms   int // output records read, rooms with outputs
	Repeats                int // output records repeating a seq with identical content (allowed)
	DLQ, DLQDistinct       int // DLQ records read, distinct values
	Lost, AppliedTwice     int
	Moved                  int // members that changed slot between consecutive lists
	Shown                  int // members shown, over every published list, each checked against its events
	DLQRepeats             int // DLQ records repeating one of the same origin (a redelivered batch)
	// InFlightRepeats are seqs published twice with different contents by
	// two processors, the first copy in flight across a Redis data loss
	// (inFlightAcrossLoss): the documented known limit, listed in InFlight.
	InFlightRepeats int
	InFlight        []string

	// Leaderboards (checkboards.go).
	BoardRecords, BoardLate int // input records with board events, those with a late one (model)
	BoardRemoves            int // remove events among them (the model applies them in partition order)
	BoardDecimals           int // events with a decimal value (a scale-10 board)
	BoardBounded            int // ranked removed members checked against bounds (Input.RemovalOrderLost)
	BoardRankings           int // rankings compared (a period of a periodic board, a window)
	BoardEntries            int // ranked members compared, over every ranking
	Mismatch                int // board entries at another rank with equal total and reached_at, DLQ records with another reason than late, settled snapshots unlike the model's
	SettledPeriods          int // settled periods the model has, each looked for on the topic and in Redis
	SettledRepeats          int // settled records repeating one (same bytes)

	// Decay is the check of the decay boards (nil when none), for
	// further checks at chosen times (DecayCheck.At).
	Decay *DecayCheck

	Problems []string
}

// OK reports whether nothing was lost, applied twice, moved or mismatched.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.AppliedTwice == 0 && r.Moved == 0 && r.Mismatch == 0
}

func (r *Report) problem(format string, args ...any) {
	if len(r.Problems) < 20 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// Input is what was fed to rostrum: the trace and the model of its good
// events, and the boards that count them.
type Input struct {
	Env   string
	TopN  int
	Trace []trace.Record
	Model *model.Model
	// Boards are every board the processors run (Boards, BoardsAt). Check
	// compares the decay boards with CheckDecay and the others with the
	// model of checkboards.go (SplitDecay).
	Boards []*boarddef.Board
	users  map[string][]string // room → users with a good event, sorted
	facts  map[[2]string]*memberFacts

	// Losses are the moments Redis began to lose its data (the schedule's
	// RedisWipe faults), for inFlightAcrossLoss.
	Losses []time.Time

	// RemovalOrderLost says Redis lost its data during the run (the
	// schedule's RedisWipe). The processors then replay their WALs in any
	// order, and a remove event may be applied before events that precede
	// it in its partition, or after ones that follow it (docs/leaderboards.md
	// "Corrections and decimals": send removals after the events they
	// should erase). A member a remove event names is then checked against
	// bounds that hold in every order: absent, or at most the total and
	// reached time it has with no removal at all.
	RemovalOrderLost bool

	// Settlement (settle.go). SettleFirst is when the first processor
	// started (its first settle); SettleClock the Kafka timestamp of the
	// clock record, zero when there was none; SettleAt, per input
	// topic-partition ({topic, partition}), the end offset before the clock
	// record: the board model settles at SettleClock after the records
	// before it. SettleWall is the wall-clock time of the clock record: a
	// period that closed by then closed by the wall clock during the
	// trace, settled at a moment the model cannot know, and only its
	// records' uniqueness is checked (SettleSkip, by "board/period").
	SettleFirst, SettleClock, SettleWall time.Time
	SettleAt                             map[[2]string]int64
	SettleSkip                           map[string]bool

	// plain are Boards without the decay boards, in their order, and
	// boards is their model, fed by Check with the input
	// records as Kafka holds them (partition, offset, record time); free
	// the same without the remove events, and removed the members remove
	// events name, per board.
	plain   []*boarddef.Board
	boards  *boardmodel.Model
	free    *boardmodel.Model
	removed []map[string]bool
}

// flagsChanged reports whether a member's republishing flags (screen
// share, spotlight, audio, video, role) differ between two outputs of the
// same list.
func flagsChanged(a, b []codec.OutputMember) bool {
	for i := range min(len(a), len(b)) {
		x, y := a[i], b[i]
		if x.ScreenShare != y.ScreenShare || x.Spotlight != y.Spotlight || x.Audio != y.Audio || x.Video != y.Video || x.Role != y.Role {
			return true
		}
	}
	return false
}

// memberFacts is what a room member's good events allow a published list
// to show of it, whatever the order they were applied in.
type memberFacts struct {
	// rankable is the earliest time of an event that ranks the member
	// when it is the newest one applied (any meeting event but a leave or a
	// role that does not rank); 0: none.
	rankable int64
	times    []int64 // every event's time
	// values are, per field, each value an event set and the earliest
	// time one did.
	values map[codec.Type]map[int64]int64
}

// scoreUnit is the time unit of the score under the default rules
// (docs/DESIGN.md §4: 17 bits of fields leave 36 for the time, in 4 ms).
const scoreUnit = 4

// NewInput builds the model of tr's good events.
func NewInput(env string, topN int, tr []trace.Record, m *model.Model) *Input {
	users := map[string][]string{}
	facts := map[[2]string]*memberFacts{}
	for _, r := range tr {
		for _, ev := range r.Events {
			m.Apply(ev)
			if !ev.Type.Meeting() {
				continue
			}
			k := [2]string{ev.RoomID, ev.UserID}
			f := facts[k]
			if f == nil {
				f = &memberFacts{values: map[codec.Type]map[int64]int64{}}
				facts[k] = f
				users[ev.RoomID] = append(users[ev.RoomID], ev.UserID)
			}
			f.times = append(f.times, ev.TS)
			if ev.Type != codec.TypeLeave && (ev.Type != codec.TypeRole || codec.Role(ev.Value).Ranked()) &&
				(f.rankable == 0 || ev.TS < f.rankable) {
				f.rankable = ev.TS
			}
			vs := f.values[ev.Type]
			if vs == nil {
				vs = map[int64]int64{}
				f.values[ev.Type] = vs
			}
			if t, ok := vs[ev.Value]; !ok || ev.TS < t {
				vs[ev.Value] = ev.TS
			}
		}
	}
	for _, u := range users {
		slices.Sort(u)
	}
	return &Input{Env: env, TopN: topN, Trace: tr, Model: m, users: users, facts: facts}
}

// shownProblem says why member om, shown at slot i of room's list o, is
// not explained by the input ("" when it is): the room never had it; no
// event of it at or before the list's time could rank it; its score's time
// is not one of its events' times; or a field shows a value no event of it
// set (at or before its time) and that is not the field's initial one.
//
// The bound is the later of the list's ts (the newest event time of the
// batch for the room, or the timer's deadline: docs/DESIGN.md §2) and the
// member's own time: a member ranked by an earlier batch's newer events may
// enter a list on a later batch of older ones (a free slot fills at once).
// Every other bound follows from last-writer-wins: whatever subset of its
// events a processor had applied, the member's time is the newest of them
// and every field's value was set by one of them.
func (in *Input) shownProblem(room string, o *codec.Output, om *codec.OutputMember) string {
	f := in.facts[[2]string{room, om.UserID}]
	if f == nil {
		return "the room never had this member"
	}
	d, err := meetingCodec.Decode(om.Score)
	if err != nil {
		return fmt.Sprintf("score %v does not decode: %v", om.Score, err)
	}
	at := d.TS + scoreUnit - 1 // the member's time, rounded down in the score
	if !slices.ContainsFunc(f.times, func(t int64) bool { return t >= d.TS && t <= at }) {
		return fmt.Sprintf("score time %d is none of its events' times", d.TS)
	}
	if f.rankable == 0 || f.rankable > max(o.TS, at) {
		return fmt.Sprintf("no event of it at or before %d ranks it (first at %d)", max(o.TS, at), f.rankable)
	}
	role, _ := codec.ParseRole(om.Role)
	for _, fv := range []struct {
		typ     codec.Type
		v, zero int64
	}{
		{codec.TypeAudio, int64(om.Audio), 0}, {codec.TypeVideo, int64(om.Video), 0},
		{codec.TypeVolume, int64(om.Volume), 0}, {codec.TypeRole, int64(role), int64(codec.RoleStudent)},
		{codec.TypeScreenShare, int64(om.ScreenShare), 0}, {codec.TypeSpotlight, int64(om.Spotlight), 0},
	} {
		if t, ok := f.values[fv.typ][fv.v]; fv.v != fv.zero && (!ok || t > at) {
			return fmt.Sprintf("field %v = %d, which no event of it at or before %d set", fv.typ, fv.v, at)
		}
	}
	return ""
}

// meetingCodec decodes published scores: the children run the default rules
// and epoch.
var meetingCodec = codec.NewMeeting(codec.DefaultEpoch)

// Check compares Redis (through rc, a single node or a cluster client), the
// output records, the DLQ records and the settled records (settle.go) with
// in; inputs are the records of the
// input topics as Kafka holds them, which the boards' model needs (a board
// finds an event late by its record's Kafka timestamp). Every board of
// in.Boards is compared: the decay boards by CheckDecay, rebased at the
// time of the call (Report.Decay), so Check runs with the processors
// stopped after their last expiry tick past any move of the base.
func Check(ctx context.Context, rc redis.UniversalClient, outputs, dlq, settled, inputs []*kgo.Record, in *Input) (*Report, error) {
	rep := &Report{}
	var decay []*boarddef.Board
	in.plain, decay = SplitDecay(in.Boards)
	if err := checkRedis(ctx, rc, in, rep); err != nil {
		return nil, err
	}
	checkOutputs(outputs, in, rep)
	late, err := checkBoards(ctx, rc, inputs, in, rep)
	if err != nil {
		return nil, err
	}
	checkDLQ(dlq, inputs, in, late, rep)
	if err := checkSettled(ctx, rc, settled, in, rep); err != nil {
		return nil, err
	}
	if len(decay) > 0 {
		if rep.Decay, err = CheckDecay(ctx, rc, in.Env, decay, in.Trace, inputs, dlq, time.Now(), rep); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// reg orders two (ts, value) registers; a register never written (ts 0)
// is below every written one, whatever its value.
func reg(ts, v int64) [2]int64 {
	if ts == 0 {
		return [2]int64{0, 0}
	}
	return [2]int64{ts, v}
}

func cmpReg(a, b [2]int64) int {
	if c := cmp.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return cmp.Compare(a[1], b[1])
}

func checkRedis(ctx context.Context, rc redis.UniversalClient, in *Input, rep *Report) error {
	m := in.Model
	rooms := m.Rooms()
	rep.Rooms = len(rooms)
	known := map[string]bool{}
	for _, room := range rooms {
		known[room] = true
		k := sink.RoomKeys(in.Env, room)
		stored, err := rc.HGetAll(ctx, k.Members).Result()
		if err != nil {
			return fmt.Errorf("chaos: read members of %s: %w", room, err)
		}
		seen := map[string]bool{}
		for user, raw := range stored {
			seen[user] = true
			var s ranking.MemberState
			if err := s.UnmarshalBinary([]byte(raw)); err != nil {
				return fmt.Errorf("chaos: member %s of %s: %w", user, room, err)
			}
			want, ok := m.State(room, user)
			if !ok {
				rep.AppliedTwice++
				rep.problem("room %s: member %s in Redis, not in the model", room, user)
				continue
			}
			e := s.Effective()
			behind, ahead := false, false
			for _, p := range [][2][2]int64{
				{reg(e.AudioTS, int64(e.Audio)), reg(want.Audio.TS, want.Audio.Value)},
				{reg(e.VolumeTS, int64(e.Volume)), reg(want.Volume.TS, want.Volume.Value)},
				{reg(e.VideoTS, int64(e.Video)), reg(want.Video.TS, want.Video.Value)},
				{reg(e.RoleTS, int64(e.Role)), reg(want.Role.TS, want.Role.Value)},
				{reg(e.PresenceTS, int64(e.Presence)), reg(want.Presence.TS, want.Presence.Value)},
				{{e.MaxTS, 0}, {want.Time, 0}},
			} {
				switch cmpReg(p[0], p[1]) {
				case -1:
					behind = true
				case 1:
					ahead = true
				}
			}
			if behind {
				rep.Lost++
				rep.problem("room %s member %s: Redis %+v is behind the model %+v", room, user, e, want)
			}
			if ahead {
				rep.AppliedTwice++
				rep.problem("room %s member %s: Redis %+v is ahead of the model %+v", room, user, e, want)
			}
		}
		for _, user := range in.users[room] {
			rep.Members++
			if !seen[user] {
				rep.Lost++
				rep.problem("room %s: member %s missing from Redis", room, user)
			}
		}

		want := m.Ranking(room)
		rep.Ranked += len(want)
		got, err := rc.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: k.Ranking, Start: 0, Stop: -1, Rev: true}).Result()
		if err != nil {
			return fmt.Errorf("chaos: read ranking of %s: %w", room, err)
		}
		gotScore := map[string]float64{}
		for _, z := range got {
			gotScore[z.Member.(string)] = z.Score
		}
		wantScore := map[string]float64{}
		for _, w := range want {
			wantScore[w.UserID] = w.Score
			s, ok := gotScore[w.UserID]
			switch {
			case !ok || s < w.Score:
				rep.Lost++
				rep.problem("room %s: ranked %s score %v in Redis (present %v), model %v", room, w.UserID, s, ok, w.Score)
			case s > w.Score:
				rep.AppliedTwice++
				rep.problem("room %s: ranked %s score %v in Redis above the model's %v", room, w.UserID, s, w.Score)
			}
		}
		for user := range gotScore {
			if _, ok := wantScore[user]; !ok {
				rep.AppliedTwice++
				rep.problem("room %s: %s ranked in Redis, not by the model", room, user)
			}
		}
		if len(got) == len(want) {
			for i := range want {
				if got[i].Member.(string) != want[i].UserID {
					rep.Mismatch++
					rep.problem("room %s: rank %d is %v in Redis, %s in the model (order only)", room, i+1, got[i].Member, want[i].UserID)
					break
				}
			}
		}
	}
	// Rooms Redis holds that the model never saw.
	extra, err := roomsInRedis(ctx, rc, in.Env)
	if err != nil {
		return err
	}
	for _, room := range extra {
		if !known[room] {
			rep.AppliedTwice++
			rep.problem("room %s in Redis, not in the model", room)
		}
	}
	return nil
}

// roomsInRedis scans the members hashes of env on every master.
func roomsInRedis(ctx context.Context, rc redis.UniversalClient, env string) ([]string, error) {
	prefix := "rostrum:" + env + ":{"
	keys, err := scanKeys(ctx, rc, prefix+"*}:m")
	if err != nil {
		return nil, fmt.Errorf("chaos: scan rooms: %w", err)
	}
	rooms := make([]string, len(keys))
	for i, k := range keys {
		rooms[i] = strings.TrimSuffix(strings.TrimPrefix(k, prefix), "}:m")
	}
	return rooms, nil
}

// scanKeys returns the keys matching pattern on every master, sorted.
func scanKeys(ctx context.Context, rc redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, c *redis.Client) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	switch c := rc.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	default:
		return nil, fmt.Errorf("chaos: cannot scan a %T", rc)
	}
	slices.Sort(keys)
	return keys, err
}

func checkOutputs(recs []*kgo.Record, in *Input, rep *Report) {
	rep.Outputs = len(recs)
	byRoom := map[string]map[int64]string{}
	alts := map[string]map[int64][]string{} // other contents of a seq, in flight across a data loss
	first := map[string]*kgo.Record{}       // output value → its first record
	for _, r := range recs {
		if _, ok := first[string(r.Value)]; !ok {
			first[string(r.Value)] = r
		}
		var o codec.Output
		if err := json.Unmarshal(r.Value, &o); err != nil || string(r.Key) != o.RoomID {
			rep.AppliedTwice++
			rep.problem("output %q with key %q does not parse as a room's output: %v", r.Value, r.Key, err)
			continue
		}
		seqs := byRoom[o.RoomID]
		if seqs == nil {
			seqs = map[int64]string{}
			byRoom[o.RoomID] = seqs
		}
		prev, dup := seqs[o.Seq]
		switch {
		case !dup:
			seqs[o.Seq] = string(r.Value)
		case prev == string(r.Value) || slices.Contains(alts[o.RoomID][o.Seq], string(r.Value)):
			rep.Repeats++
		case in.inFlightAcrossLoss(first[prev], r):
			rep.InFlightRepeats++
			if alts[o.RoomID] == nil {
				alts[o.RoomID] = map[int64][]string{}
			}
			alts[o.RoomID][o.Seq] = append(alts[o.RoomID][o.Seq], string(r.Value))
			rep.InFlight = append(rep.InFlight, fmt.Sprintf("room %s seq %d (produced at %s and at %s by two processors, Redis lost its data at %s)",
				o.RoomID, o.Seq, first[prev].Timestamp.UTC().Format("15:04:05.000"), r.Timestamp.UTC().Format("15:04:05.000"),
				in.lossBefore(first[prev].Timestamp).UTC().Format("15:04:05.000")))
		default:
			rep.AppliedTwice++
			rep.problem("room %s seq %d published with different contents (produced at %s and at %s, the second at partition %d offset %d):\n  %s\n  %s",
				o.RoomID, o.Seq, first[prev].Timestamp.UTC().Format("15:04:05.000"), r.Timestamp.UTC().Format("15:04:05.000"), r.Partition, r.Offset, prev, r.Value)
		}
	}
	rep.OutputRooms = len(byRoom)
	last := map[string][][]string{}
	for room, seqs := range byRoom {
		if _, ok := in.users[room]; !ok {
			rep.AppliedTwice++
			rep.problem("room %s: %d outputs, the model never saw the room", room, len(seqs))
		}
		top := int64(0)
		for s := range seqs {
			top = max(top, s)
		}
		type list struct {
			ids []string
			top []codec.OutputMember
		}
		var prev []list
		for s := int64(1); s <= top; s++ {
			raw, ok := seqs[s]
			if !ok {
				rep.Lost++
				rep.problem("room %s: seq %d missing (highest %d)", room, s, top)
				prev = nil
				continue
			}
			var curs []list
			for _, v := range append([]string{raw}, alts[room][s]...) {
				var o codec.Output
				_ = json.Unmarshal([]byte(v), &o)
				cur := make([]string, len(o.Top))
				for i, m := range o.Top {
					cur[i] = m.UserID
					rep.Shown++
					if why := in.shownProblem(room, &o, &o.Top[i]); why != "" {
						rep.AppliedTwice++
						rep.problem("room %s seq %d: %s at slot %d: %s", room, s, m.UserID, i, why)
					}
				}
				if len(cur) > in.TopN || len(cur) != len(slices.Compact(slices.Sorted(slices.Values(cur)))) {
					rep.AppliedTwice++
					rep.problem("room %s seq %d: %d members, a member twice or more than %d: %v", room, s, len(cur), in.TopN, cur)
				}
				curs = append(curs, list{cur, o.Top})
			}
			// Against the list before (each of its contents, when it went
			// out twice across a data loss: any one must fit).
			fits := func(p, c list, count bool) bool {
				ok := true
				// The same list again is a republish for a listed member's
				// changed flags (docs/DESIGN.md §10); with no flag changed
				// it is an output applied twice.
				if slices.Equal(p.ids, c.ids) && !flagsChanged(p.top, c.top) {
					ok = false
					if count {
						rep.AppliedTwice++
						rep.problem("room %s: seq %d repeats the list of seq %d with the same flags: %v", room, s, s-1, c.ids)
					}
				}
				// A member in both lists keeps its slot while the slot
				// exists; when the list shrinks, members past its end move
				// down (stability.Merge).
				for i, m := range p.ids {
					if j := slices.Index(c.ids, m); j >= 0 && j != i && i < len(c.ids) {
						ok = false
						if count {
							rep.Moved++
							rep.problem("room %s seq %d: %s moved from slot %d to %d (%v → %v)", room, s, m, i, j, p.ids, c.ids)
						}
					}
				}
				return ok
			}
			for _, c := range curs {
				if len(prev) > 0 && !slices.ContainsFunc(prev, func(p list) bool { return fits(p, c, false) }) {
					fits(prev[0], c, true)
				}
			}
			prev = curs
		}
		for _, p := range prev {
			last[room] = append(last[room], p.ids)
		}
	}
	for _, room := range in.Model.Rooms() {
		want := in.Model.Top(room, in.TopN)
		// The last list (any of its contents, see above) holds the
		// model's top-N set.
		fits := func(l []string) bool {
			return len(l) <= len(want) && !slices.ContainsFunc(want, func(m model.Member) bool { return !slices.Contains(l, m.UserID) })
		}
		if slices.ContainsFunc(last[room], fits) {
			continue
		}
		var l []string
		if len(last[room]) > 0 {
			l = last[room][0]
		}
		for _, m := range want {
			if !slices.Contains(l, m.UserID) {
				rep.Lost++
				rep.problem("room %s: model top member %s missing from the last output %v", room, m.UserID, l)
			}
		}
		if len(l) > len(want) {
			rep.AppliedTwice++
			rep.problem("room %s: last output has %d members, the model's top has %d", room, len(l), len(want))
		}
	}
}

// inFlightAcrossLoss reports whether two outputs of one seq with different
// contents are the known limit "Rebuild while an output is in flight"
// (docs/RELIABILITY.md): two processors (the records' producer ids differ)
// and the earlier copy produced after Redis began to lose its data
// (Input.Losses), within lossWindow: stored before the loss and published
// after another processor's rebuild had read the output topic. A repeat by
// one processor, or one whose earlier copy was out before any loss, is
// applied twice.
func (in *Input) inFlightAcrossLoss(a, b *kgo.Record) bool {
	return a != nil && a.ProducerID != b.ProducerID && !in.lossBefore(a.Timestamp).IsZero()
}

// lossWindow bounds how long after a data loss an output stored before it
// can still be published: a batch paused (a zombie) or retrying meanwhile.
const lossWindow = 30 * time.Second

// lossBefore returns the latest data loss that began before t, within
// lossWindow, or the zero time.
func (in *Input) lossBefore(t time.Time) time.Time {
	var at time.Time
	for _, l := range in.Losses {
		if !l.After(t) && t.Sub(l) <= lossWindow && l.After(at) {
			at = l
		}
	}
	return at
}

// origin names an input record: topic, partition, offset.
type origin struct {
	topic     string
	partition int32
	offset    int64
}

func originOf(r *kgo.Record) origin { return origin{r.Topic, r.Partition, r.Offset} }

func (o origin) String() string { return fmt.Sprintf("%s/%d@%d", o.topic, o.partition, o.offset) }

// checkDLQ compares the DLQ with the input records, by origin: every bad
// input record and every record with a late board event (late, by origin)
// must be there, each with the origin headers of its input record and its
// bytes, and nothing else. Two identical bad records are two records, each
// with its own origin: both must be there. A record that appears more than
// once under one origin (a batch redelivered after a fault, which sends its
// DLQ records again) is counted (Report.DLQRepeats), not failed: the DLQ is
// at least once.
func checkDLQ(recs, inputs []*kgo.Record, in *Input, late map[origin]bool, rep *Report) {
	rep.DLQ = len(recs)
	bad := map[string]bool{}
	for _, r := range in.Trace {
		if !r.Good() {
			bad[string(r.Value)] = true
		}
	}
	byOrigin := map[origin]*kgo.Record{}
	want := map[origin]bool{}
	for _, r := range inputs {
		o := originOf(r)
		byOrigin[o] = r
		if bad[string(r.Value)] || late[o] {
			want[o] = true
		}
	}
	got := map[origin][2]string{} // origin → value, reason
	for _, r := range recs {
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		part, perr := strconv.ParseInt(h["rostrum-partition"], 10, 32)
		off, oerr := strconv.ParseInt(h["rostrum-offset"], 10, 64)
		if h["rostrum-error"] == "" || h["rostrum-topic"] == "" || perr != nil || oerr != nil {
			rep.problem("DLQ record without reason or origin: headers %v", h)
			rep.Lost++
			continue
		}
		o := origin{h["rostrum-topic"], int32(part), off}
		src, ok := byOrigin[o]
		switch {
		case !ok || string(src.Value) != string(r.Value):
			rep.Lost++
			rep.problem("DLQ record from %s is not the input record there: %.80q", o, r.Value)
			continue
		case late[o] && !bad[string(r.Value)] && !strings.Contains(h["rostrum-error"], "late"):
			rep.Mismatch++
			rep.problem("record %s with a late board event in the DLQ for another reason %q", o, h["rostrum-error"])
		}
		if _, dup := got[o]; dup {
			rep.DLQRepeats++
			continue
		}
		got[o] = [2]string{string(r.Value), h["rostrum-error"]}
	}
	rep.DLQDistinct = len(got)
	for o := range want {
		if _, ok := got[o]; !ok {
			rep.Lost++
			rep.problem("bad record %s missing from the DLQ: %.80q", o, byOrigin[o].Value)
		}
	}
	for o, v := range got {
		if !want[o] {
			rep.Lost++
			rep.problem("good record %s sent to the DLQ (%s): %.80q", o, v[1], v[0])
		}
	}
}
