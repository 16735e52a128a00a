package board_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

func dur(d time.Duration) *time.Duration { return &d }

// testBoards covers every kind, op and tie, with zones that change their
// clocks during the simulated days.
func testBoards(t testing.TB) []*boarddef.Board {
	t.Helper()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hour-berlin", Events: []string{"gift"}, Member: "room_id", Kind: "periodic", Period: "hour",
			TZ: "Europe/Berlin", Tie: "first-reached", Grace: dur(30 * time.Second)},
		{Name: "day-ny", Events: []string{"received", "read", "passed"}, Member: "user_id", Value: "one",
			Kind: "periodic", Period: "day", TZ: "America/New_York", Tie: "first-reached", Retention: 3},
		{Name: "week-best", Events: []string{"score"}, Member: "user_id", Op: "best", Kind: "periodic",
			Period: "week", WeekStart: "sunday", TZ: "Asia/Shanghai", Tie: "first-reached"},
		{Name: "month-set", Events: []string{"score"}, Member: "user_id", Op: "set", Kind: "periodic",
			Period: "month", TZ: "Europe/Berlin"},
		{Name: "hour-capped", Events: []string{"gift", "trade"}, Member: "user_id", Kind: "periodic", Period: "hour",
			Tie: "first-reached", MaxTotal: 120, Retention: 2},
		{Name: "rolling-5m", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: time.Minute,
			Slices: 5, Tie: "first-reached", Grace: dur(20 * time.Second)},
		{Name: "trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour), Grace: dur(10 * time.Second)},
		// Windows with slices of their own: two share the 2m slices, and a
		// short window with a coarse slice keeps an event longer than the
		// longest one.
		{Name: "trades-own", Events: []string{"trade", "gift"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: []boarddef.Window{{Length: 3 * time.Minute}, {Length: 8 * time.Minute, Slice: 2 * time.Minute},
				{Length: 20 * time.Minute, Slice: 2 * time.Minute}, {Length: time.Hour, Slice: 10 * time.Minute}},
			Tie: "first-reached", Grace: dur(10 * time.Second)},
		{Name: "coarse-first", Events: []string{"trade"}, Member: "user_id", Kind: "windows",
			Windows: []boarddef.Window{{Length: 10 * time.Minute, Slice: 10 * time.Minute}, {Length: 12 * time.Minute, Slice: 2 * time.Minute}}},
		{Name: "trades-tie", Events: []string{"trade", "gift"}, Member: "user_id", Kind: "windows", Slice: 2 * time.Minute,
			Windows: boarddef.Lengths(4*time.Minute, 20*time.Minute), Tie: "first-reached", MaxTotal: 150},
	})
	if err != nil {
		t.Fatal(err)
	}
	return bs
}

type rec struct {
	topic     string
	partition int32
	offset    int64
	time      time.Time
	evs       []codec.Event
}

// sim drives a Store and the model with the same records and expiries.
type sim struct {
	t                    *testing.T
	rng                  *rand.Rand
	boards               []*boarddef.Board
	store                *board.Store
	model                *boardmodel.Model
	now                  time.Time
	log                  map[int32][]rec // per partition, every record produced
	next                 map[int32]int64
	lateRedis, lateModel map[string]bool
	mu                   sync.Mutex
	total                board.Result  // summed over every Apply
	sent                 []codec.Event // events sent with an id
	ids                  int
	expired              board.ExpireResult
	gen                  func(at time.Time) codec.Event // nil: event
	parts                int32                          // partitions fed; 0: 2
}

func newSim(t *testing.T, rdb redis.UniversalClient, seed uint64, start time.Time) *sim {
	return newSimOf(t, rdb, seed, start, testBoards(t))
}

func newSimOf(t *testing.T, rdb redis.UniversalClient, seed uint64, start time.Time, bs []*boarddef.Board) *sim {
	s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 7)), boards: bs, store: board.NewStore(rdb, "test", bs),
		model: boardmodel.New(bs), now: start, log: map[int32][]rec{}, next: map[int32]int64{},
		lateRedis: map[string]bool{}, lateModel: map[string]bool{}}
	s.store.SetClock(func() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.now })
	return s
}

var types = []codec.Type{codec.TypeGift, codec.TypeScore, codec.TypeReceived, codec.TypeRead, codec.TypePassed, codec.TypeTrade}

func (s *sim) event(at time.Time) codec.Event {
	r := s.rng
	typ := types[r.IntN(len(types))]
	ev := codec.Event{RoomID: fmt.Sprintf("r%d", r.IntN(6)), UserID: fmt.Sprintf("u%d", r.IntN(8)), Type: typ}
	switch typ {
	case codec.TypeGift, codec.TypeScore, codec.TypeTrade:
		ev.Value = 1 + r.Int64N(50)
		if r.IntN(8) == 0 {
			ev.Value = 1 + r.Int64N(3) // many equal totals: ties
		}
	}
	lag := time.Duration(r.Int64N(int64(90 * time.Second)))
	switch r.IntN(20) {
	case 0:
		lag = time.Duration(r.Int64N(int64(90 * time.Minute))) // often late
	case 1:
		lag = -time.Duration(r.Int64N(int64(10 * time.Second))) // slightly ahead
	}
	ev.TS = at.Add(-lag).UnixMilli()
	switch {
	case len(s.sent) > 0 && r.IntN(6) == 0:
		// A producer's retry: the same event with the same id, in a new
		// record (maybe on another partition, maybe late by now).
		return s.sent[r.IntN(len(s.sent))]
	case r.IntN(4) == 0:
		s.ids++
		ev.ID = fmt.Sprintf("id-%d", s.ids)
		s.sent = append(s.sent, ev)
	}
	return ev
}

// produce makes n new records on partition p at the current time.
func (s *sim) produce(p int32, n int) []rec {
	var out []rec
	for range n {
		r := rec{topic: "t", partition: p, offset: s.next[p], time: s.now}
		if s.rng.IntN(6) == 0 {
			// Consumer lag: produced a while ago, so expiry may have passed
			// its slices although the record time says it was on time.
			r.time = s.now.Add(-time.Duration(s.rng.Int64N(int64(15 * time.Minute))))
		}
		s.next[p]++
		for range 1 + s.rng.IntN(3) {
			if s.gen != nil {
				r.evs = append(r.evs, s.gen(r.time))
			} else {
				r.evs = append(r.evs, s.event(r.time))
			}
		}
		s.log[p] = append(s.log[p], r)
		out = append(out, r)
	}
	return out
}

// key names a record: Add reports only the first late event of a record,
// so late events are compared per record.
func key(r rec) string { return fmt.Sprintf("%s/%d/%d", r.topic, r.partition, r.offset) }

// apply sends recs (offset order per partition) through a Batch and Apply,
// and through the model.
func (s *sim) apply(recs []rec) {
	for _, r := range recs {
		s.record(r)
	}
	s.applyStore(recs)
}

// record feeds one record to the model.
func (s *sim) record(r rec) {
	if len(s.model.Record(r.topic, r.partition, r.offset, r.time, r.evs)) > 0 {
		s.lateModel[key(r)] = true
	}
}

// applyStore sends recs (offset order per partition) through a Batch and
// Apply only.
func (s *sim) applyStore(recs []rec) {
	t := s.t
	b := s.store.NewBatch()
	for _, r := range recs {
		b.Cover(r.topic, r.partition, r.offset, r.offset) // as the processor does for every record read
		err := b.Add(r.topic, r.partition, r.offset, r.time, r.evs)
		if err != nil {
			s.lateRedis[key(r)] = true
		}
	}
	res, err := s.store.Apply(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}

	s.total.Applied += res.Applied
	s.total.Skipped += res.Skipped
	s.total.Duplicate += res.Duplicate
	s.total.Splits += res.Splits
	s.total.Saturated += res.Saturated
	s.total.Late = append(s.total.Late, res.Late...)
	for _, l := range res.Late {
		s.lateRedis[key(rec{topic: l.Topic, partition: l.Partition, offset: l.Offset})] = true
	}
}

func (s *sim) expire(concurrent int) {
	var wg sync.WaitGroup
	for range concurrent {
		wg.Go(func() {
			res, err := s.store.Expire(context.Background(), s.now)
			if err != nil {
				s.t.Error(err)
			}
			s.mu.Lock()
			s.expired.Subtracted += res.Subtracted
			s.expired.Removed += res.Removed
			s.expired.Deleted += res.Deleted
			s.mu.Unlock()
		})
	}
	wg.Wait()
	s.model.Expire(s.now)
}

// check compares every readable ranking with the model, member by member.
func (s *sim) check() {
	t := s.t
	t.Helper()
	ctx := context.Background()
	for bi, b := range s.boards {
		var targets [][2]string
		if b.Kind() == boarddef.Periodic {
			cur := b.Period(s.now)
			oldest := cur
			for range b.Retention() {
				oldest = b.Period(oldest.Start.Add(-time.Millisecond))
			}
			for _, l := range s.model.Periods(bi) {
				p, err := b.ParsePeriod(l)
				if err != nil {
					t.Fatalf("%s: parse %s: %v", b.Name(), l, err)
				}
				if p.Start.After(cur.Start) || p.Start.Before(oldest.Start) {
					// A future period (events ahead of the clock) or one
					// past the retention: not readable.
					if _, err := s.store.Top(ctx, b.Name(), l, "", 0, 10); !errors.Is(err, boarddef.ErrUnknownPeriod) {
						t.Fatalf("%s: period %s (current %s): %v, want ErrUnknownPeriod", b.Name(), l, cur.Label, err)
					}
					continue
				}
				targets = append(targets, [2]string{l, ""})
			}
		} else {
			for _, w := range b.Windows() {
				targets = append(targets, [2]string{"", w})
			}
		}
		for _, tg := range targets {
			j, _ := b.Window(tg[1])
			want := s.model.Ranking(bi, tg[0], j)
			page, err := s.store.Top(ctx, b.Name(), tg[0], tg[1], 0, board.MaxPage)
			if err != nil {
				t.Fatalf("%s %v: %v", b.Name(), tg, err)
			}
			got := make([]boardmodel.Entry, len(page.Members))
			for i, m := range page.Members {
				got[i] = boardmodel.Entry{Member: m.Member, Rank: m.Rank, Total: m.Total, ReachedAt: m.ReachedAt}
			}
			if !slices.Equal(got, want) || page.TotalMembers != int64(len(want)) {
				t.Fatalf("%s %v at %s:\n redis %v (%d)\n model %v", b.Name(), tg, s.now.UTC(), got, page.TotalMembers, want)
			}
			for _, w := range want {
				e, err := s.store.Member(ctx, b.Name(), w.Member, tg[0], tg[1])
				if err != nil || e != board.Entry(w) {
					t.Fatalf("%s %v member %s: %v %v, want %v", b.Name(), tg, w.Member, e, err, w)
				}
			}
		}
	}
	if !mapsEqual(s.lateRedis, s.lateModel) {
		t.Fatalf("late events differ:\n redis %v\n model %v", s.lateRedis, s.lateModel)
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// run simulates steps batches: new records on two partitions, redeliveries
// (whole and overlapping), idle gaps, and expiry from several callers.
func (s *sim) run(steps int) {
	for step := range steps {
		r := s.rng
		switch r.IntN(10) {
		case 0:
			s.now = s.now.Add(time.Duration(r.Int64N(int64(40 * time.Minute)))) // idle gap across expiries
		default:
			s.now = s.now.Add(time.Duration(r.Int64N(int64(3 * time.Minute))))
		}
		if r.IntN(3) == 0 {
			s.expire(1 + r.IntN(3))
		}
		var recs []rec
		parts := s.parts
		if parts == 0 {
			parts = 2
		}
		for p := int32(0); p < parts; p++ {
			old := s.log[p]
			switch r.IntN(8) {
			case 0: // redelivery of an already applied range
				if len(old) > 0 {
					from := r.IntN(len(old))
					recs = append(recs, old[from:min(len(old), from+1+r.IntN(4))]...)
					continue
				}
			case 1: // overlapping redelivery: old records followed by new ones
				if len(old) > 0 {
					from := max(0, len(old)-1-r.IntN(4))
					recs = append(recs, old[from:]...)
				}
			}
			recs = append(recs, s.produce(p, r.IntN(6))...)
		}
		s.apply(recs)
		if step%10 == 9 {
			s.check()
		}
	}
	s.now = s.now.Add(3 * time.Hour)
	s.expire(2)
	s.check()
}

func TestRandomizedAgainstModel(t *testing.T) {
	r := testenv.StartRedis(t)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			if err := r.Client().FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			// Across Berlin's and New York's spring-forward nights, a week and a month boundary.
			s := newSim(t, r.Client(), seed, time.Date(2027, 3, 27, 20, 0, 0, 0, time.UTC))
			if seed == 2 {
				// Across the autumn night when Berlin's 02:00-03:00 happens twice.
				s.now = time.Date(2027, 10, 30, 20, 0, 0, 0, time.UTC)
			}
			s.run(400)
			// Every path was taken.
			tot := s.total
			t.Logf("applied %d, skipped parts %d, duplicate ids %d, splits %d, saturated %d, late in redis %d, subtracted %d, removed %d",
				tot.Applied, tot.Skipped, tot.Duplicate, tot.Splits, tot.Saturated, len(tot.Late), s.expired.Subtracted, s.expired.Removed)
			if tot.Skipped == 0 || tot.Duplicate == 0 || tot.Splits == 0 || tot.Saturated == 0 || s.expired.Subtracted == 0 || s.expired.Removed == 0 ||
				s.expired.Deleted == 0 || len(tot.Late) == 0 {
				t.Errorf("a path was not exercised: %+v %+v", tot, s.expired)
			}
		})
	}
}

// TestCluster runs the randomized stream against a 3-master Redis Cluster:
// every script touches only its board's slot.
func TestCluster(t *testing.T) {
	c := testenv.StartRedisCluster(t)
	s := newSim(t, c.Client(), 42, time.Date(2027, 3, 27, 20, 0, 0, 0, time.UTC))
	s.run(150)
	if s.total.Applied == 0 {
		t.Fatal("nothing applied")
	}
}

// TestReplayAfterRedisLoss replays, after Redis lost its data, the records
// of two partitions as the write-ahead logs of two processors hold them
// once the partitions moved from one to the other: an older range in one
// log, a newer one in the other, disjoint or overlapping, replayed in either
// order, and, the older log pruned, a processor that rewinds Kafka and
// re-consumes everything in batches of other sizes. Every record must count once, whatever the order: the
// boards record the ranges of offsets they applied, not only the highest.
func TestReplayAfterRedisLoss(t *testing.T) {
	r := testenv.StartRedis(t)
	for _, tc := range []replayCase{
		{"disjoint in order", 0, false, false},
		{"disjoint newer first", 0, true, false},
		{"overlapping in order", 3, false, false},
		{"overlapping newer first", 3, true, false},
		{"newer then rewind", 2, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testReplayAfterRedisLoss(t, r, tc) })
	}
}

// replayCase is a case of TestReplayAfterRedisLoss.
type replayCase struct {
	name    string
	overlap int  // batches the two logs have in common
	newer   bool // the newer range replays first
	rewind  bool // the older log is gone: everything is re-consumed in batches of other sizes
}

func testReplayAfterRedisLoss(t *testing.T, r *testenv.Redis, tc replayCase) {
	ctx := context.Background()
	if err := r.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	s := newSim(t, r.Client(), 11, time.Date(2027, 3, 27, 20, 0, 0, 0, time.UTC))
	var batches [][]rec
	for range 40 {
		s.now = s.now.Add(time.Duration(s.rng.Int64N(int64(time.Minute))))
		var recs []rec
		for p := int32(0); p < 2; p++ {
			recs = append(recs, s.produce(p, 1+s.rng.IntN(5))...)
		}
		batches = append(batches, recs)
		for _, r := range recs {
			s.record(r)
		}
	}
	// Before the loss: everything applied once, in order.
	for _, b := range batches {
		s.applyStore(b)
	}
	s.check()
	if err := r.Client().FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// The newer log starts inside the older one when they overlap:
	// its first batch redelivers the older log's last batches and
	// one more, as a new owner refetches from the committed offset.
	older, newer := batches[:25], batches[25:]
	if tc.overlap > 0 {
		first := slices.Concat(batches[25-tc.overlap : 26]...)
		slices.SortStableFunc(first, func(a, b rec) int { return int(a.partition - b.partition) })
		newer = append([][]rec{first}, batches[26:]...)
	}
	logs := [][][]rec{older, newer}
	if tc.newer {
		logs[0], logs[1] = newer, older
	}
	if tc.rewind {
		logs = logs[:1] // the older log was pruned: Kafka is rewound instead
	}
	for _, log := range logs {
		for _, b := range log {
			s.applyStore(b)
		}
	}
	if tc.rewind {
		var all []rec
		for _, b := range batches {
			all = append(all, b...)
		}
		for len(all) > 0 {
			n := min(len(all), 1+s.rng.IntN(12))
			s.applyStore(all[:n])
			all = all[n:]
		}
	}
	s.check()
	if (tc.overlap > 0 && !tc.newer || tc.rewind) && s.total.Splits == 0 {
		t.Error("no part overlapped the applied offsets")
	}
}
