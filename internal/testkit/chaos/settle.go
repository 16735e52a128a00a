package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// Settlement under faults.
//
// The processors settle a periodic board's closed periods on the later of
// the wall clock and the newest record time they saw (docs/DESIGN.md §8
// "Settled periods"). During the trace nothing closes (its board events
// are at most 2 hours old, and a period that closes by the wall clock
// while the run goes on is left out of the comparison, see
// Input.SettleSkip); once the trace is applied, the harness produces one
// record whose Kafka timestamp lies SettleAhead in the future (the clock
// record, an event of a type rostrum skips), which closes every period the
// trace counted: the processors settle them at once, with a processor
// SIGKILLed meanwhile, then Redis loses its data (the processors restore
// the settled periods from their topic, and must not settle them again),
// then board events for the settled periods arrive (LateAfterSettle),
// which must go to the DLQ as late and leave the snapshots unchanged.
//
// The check (checkSettled) wants every settled record on
// {env}.boards.settled once per board and period (a repeat must carry the
// same bytes: a processor that died between the broker's acknowledgement
// and its own publishes it again), the set of settled periods equal to the
// board model's (boardmodel.Settle at the first processor's start and at
// the clock record), and each record's and each Redis snapshot's members
// and top equal to the model's frozen ranking.

// SettleAhead is how far in the future the clock record's timestamp lies:
// past the end of every week and day the trace counted.
const SettleAhead = 9 * 24 * time.Hour

// ProduceClock produces the clock record with Kafka timestamp at and
// records, in h.In, where the input topics ended before it (the board
// model settles there) and the settle time.
func (h *Harness) ProduceClock(at time.Time) {
	h.T.Helper()
	h.In.SettleAt = map[[2]string]int64{}
	for _, t := range h.Topics.Inputs() {
		for _, r := range h.Kafka.ReadAll(t) {
			k := [2]string{r.Topic, fmt.Sprint(r.Partition)}
			h.In.SettleAt[k] = max(h.In.SettleAt[k], r.Offset+1)
		}
	}
	h.In.SettleClock, h.In.SettleWall = at, time.Now()
	h.produceClock()
}

func (h *Harness) produceClock() {
	h.T.Helper()
	v := fmt.Sprintf(`{"room_id":"settle-clock","user_id":"clock","type":"tick","ts":%d}`, time.Now().UnixMilli())
	rec := &kgo.Record{Topic: h.Topics.RTC, Key: []byte("settle-clock"), Value: []byte(v), Timestamp: h.In.SettleClock}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Kafka.Client().ProduceSync(ctx, rec).FirstErr(); err != nil {
		h.T.Fatalf("produce the clock record: %v", err)
	}
}

// WaitSettledRecords waits until {env}.boards.settled holds every board
// and period the model settles at the settle time (Input.SettleClock),
// producing the clock record again every 2 s meanwhile: a processor keeps
// the newest record time it saw in memory only, so one killed after
// committing the clock record and before settling takes the record's time
// with it (in production record times follow the wall clock, which then
// settles the period).
func (h *Harness) WaitSettledRecords(timeout time.Duration) {
	h.T.Helper()
	plain, _ := SplitDecay(h.In.Boards) // decay boards never settle
	m := boardmodel.New(plain)
	m.Settle(h.In.SettleFirst)
	var want []string
	for _, s := range m.Settle(h.In.SettleClock) {
		want = append(want, s.Board+"/"+s.Period)
	}
	deadline, last := time.Now().Add(timeout), time.Now()
	for {
		got := map[string]bool{}
		for _, r := range h.Kafka.ReadAll(h.Topics.Settled) {
			got[string(r.Key)] = true
		}
		missing := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return got[k] })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.T.Fatalf("periods not settled within %s: %v; logs in %s", timeout, missing, h.logDir)
		}
		if time.Since(last) > 2*time.Second {
			h.produceClock()
			last = time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LateAfterSettle returns records of board events for the periods the
// clock record closed, from half an hour before now: settled, so late on
// every periodic board that counts them (the rolling board counts the
// gifts). They carry an id, so a redelivery counts once on the rolling
// board too.
func LateAfterSettle(now time.Time) []trace.Record {
	ts := now.Add(-30 * time.Minute).UnixMilli()
	var out []trace.Record
	for i, e := range []struct {
		typ   codec.Type
		name  string
		value int64
	}{{codec.TypeGift, "gift", 7}, {codec.TypeScore, "score", 15}, {codec.TypeReceived, "received", 0},
		{codec.TypeRead, "read", 0}, {codec.TypePassed, "passed", 0}} {
		room, user, id := fmt.Sprintf("r-%d", i), fmt.Sprintf("u-%d", i), fmt.Sprintf("late-%d", i)
		v := fmt.Sprintf(`{"type":%q,"room_id":%q,"user_id":%q,"id":%q,"ts":%d`, e.name, room, user, id, ts)
		if e.value != 0 {
			v += fmt.Sprintf(`,"value":%d`, e.value)
		}
		out = append(out, trace.Record{Topic: "rtc", Key: room, Value: []byte(v + "}"),
			Events: []codec.Event{{RoomID: room, UserID: user, Type: e.typ, Value: e.value, TS: ts, Source: codec.SourceRTC, ID: id}}})
	}
	return out
}

// ProduceLate produces recs (LateAfterSettle) and adds them to the input
// the check compares with.
func (h *Harness) ProduceLate(recs []trace.Record) {
	h.T.Helper()
	var krs []*kgo.Record
	for _, r := range recs {
		krs = append(krs, &kgo.Record{Topic: EnvName + ".callbacks." + r.Topic, Key: []byte(r.Key), Value: r.Value})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := h.Kafka.Client().ProduceSync(ctx, krs...).FirstErr(); err != nil {
		h.T.Fatalf("produce late records: %v", err)
	}
	h.In.Trace = append(h.In.Trace, recs...)
}

// settledRecord is a record of {env}.boards.settled.
type settledRecord struct {
	Board    string `json:"board"`
	Period   string `json:"period"`
	ClosedAt int64  `json:"closed_at"`
	Members  int64  `json:"members"`
	Top      []struct {
		Member    string      `json:"member"`
		Rank      int64       `json:"rank"`
		Total     json.Number `json:"total"`
		ReachedAt int64       `json:"reached_at"`
	} `json:"top"`
}

// checkSettled compares the settled records and the Redis snapshots with
// the model's settled periods (see the top of this file). A period that
// closed by the wall clock while the trace ran (Input.SettleSkip) is
// checked for its records' uniqueness only.
func checkSettled(ctx context.Context, rc redis.UniversalClient, recs []*kgo.Record, in *Input, rep *Report) error {
	if in.SettleClock.IsZero() {
		return nil
	}
	byKey := map[string]string{}
	for _, r := range recs {
		k := string(r.Key)
		if prev, ok := byKey[k]; ok {
			rep.SettledRepeats++
			if prev != string(r.Value) {
				rep.AppliedTwice++
				rep.problem("settled %s published twice with different contents:\n  %s\n  %s", k, prev, r.Value)
			}
			continue
		}
		byKey[k] = string(r.Value)
	}
	st := board.NewStore(rc, in.Env, in.plain)
	for bi, b := range in.plain {
		if !b.Settles() {
			continue
		}
		for _, want := range in.boards.SettledOf(bi) {
			k := want.Board + "/" + want.Period
			rep.SettledPeriods++
			raw, ok := byKey[k]
			delete(byKey, k)
			if !ok {
				rep.Lost++
				rep.problem("settled %s missing from the topic", k)
				continue
			}
			if in.SettleSkip[k] {
				continue
			}
			var got settledRecord
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				rep.AppliedTwice++
				rep.problem("settled %s does not parse: %v", k, err)
				continue
			}
			entries := make([]boardmodel.Entry, len(got.Top))
			for i, e := range got.Top {
				total, err := b.ParseUnits(e.Total.String())
				if err != nil {
					return fmt.Errorf("chaos: settled %s: total %q: %w", k, e.Total, err)
				}
				entries[i] = boardmodel.Entry{Member: e.Member, Rank: e.Rank, Total: total, ReachedAt: e.ReachedAt}
			}
			if got.ClosedAt != want.ClosedAt {
				rep.Mismatch++
				rep.problem("settled %s closed at %d, the model's at %d", k, got.ClosedAt, want.ClosedAt)
			}
			compareSettled(fmt.Sprintf("settled %s on the topic", k), got.Members, entries, want, bi, in, rep)
			page, err := st.Settled(ctx, b.Name(), want.Period, 0, board.MaxPage)
			if err != nil {
				rep.Lost++
				rep.problem("settled %s: no snapshot in Redis: %v", k, err)
				continue
			}
			snap := make([]boardmodel.Entry, len(page.Top))
			for i, e := range page.Top {
				snap[i] = boardmodel.Entry(e)
			}
			compareSettled(fmt.Sprintf("settled %s in Redis", k), page.Members, snap, want, bi, in, rep)
		}
	}
	for k := range byKey {
		rep.AppliedTwice++
		rep.problem("settled %s on the topic, the model settled no such period", k)
	}
	return nil
}

// compareSettled compares one settled snapshot (its member count and top)
// with the model's, within the bounds of the removed members when Redis
// lost its data (Input.RemovalOrderLost; see boundRemoved): the count then
// may differ by at most the removed members.
func compareSettled(what string, members int64, top []boardmodel.Entry, want boardmodel.Settled, bi int, in *Input, rep *Report) {
	wantTop := want.Top
	slack := int64(0)
	if in.RemovalOrderLost && len(in.removed[bi]) > 0 {
		top, wantTop = boundRemoved(what, top, wantTop, in.free.Ranking(bi, want.Period, 0), in.removed[bi], rep)
		slack = int64(len(in.removed[bi]))
	}
	if d := members - want.Members; d < -slack || d > slack {
		rep.Mismatch++
		rep.problem("%s: %d members, the model's %d", what, members, want.Members)
	}
	compareRanking(what, top, wantTop, rep)
}
