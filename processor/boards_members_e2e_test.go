package processor_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/examples"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// TestBoardMembersEndToEnd feeds every seed scenario through the processor
// (kfake, WAL, real redis-server) and reads every member of the trace, and
// one never seen, on every board in one Standings call per 100 members: each
// rank, total and reached time must be the model's (0 where the member is
// not ranked). examples/boards.yaml's hints, evaluated on those standings,
// must give the texts they give on the model's numbers, and some member
// must get one.
func TestBoardMembersEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(3, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs := seedBoards(t)
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	now := time.Now()
	bst.SetClock(func() time.Time { return now })
	trace := boardTrace(rand.New(rand.NewPCG(8, 8)), now, 300, topics)
	m := boardmodel.New(bs)
	m.Rebase(now)
	cl := k.Client()
	seen := map[string]bool{"nobody": true}
	members := []string{"nobody"}
	for _, br := range trace {
		if err := cl.ProduceSync(context.Background(), br.rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range br.evs {
			for _, id := range []string{ev.UserID, ev.RoomID} {
				if id != "" && !seen[id] {
					seen[id] = true
					members = append(members, id)
				}
			}
		}
	}
	waitRecords(t, p, int64(len(trace)))
	for _, br := range trace {
		m.Record(br.rec.Topic, br.rec.Partition, br.rec.Offset, br.rec.Timestamp, br.evs)
	}
	chain, err := examples.Hints()
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name()
	}
	ranked, hinted := 0, 0
	for from := 0; from < len(members); from += board.MaxMembers {
		chunk := members[from:min(len(members), from+board.MaxMembers)]
		got, err := bst.Standings(context.Background(), names, chunk)
		if err != nil {
			t.Fatal(err)
		}
		for i, member := range chunk {
			for bi, b := range bs {
				gb := got[i].Boards[bi]
				for j, s := range gb.Standings {
					want := modelEntry(m, bi, b, j, member, now)
					if s.Rank != want.Rank || s.Total != want.Total || s.ReachedAt != want.ReachedAt {
						t.Fatalf("%s on %s %s: redis %+v, model %+v", member, b.Name(), s.Window, s, want)
					}
					if s.Rank > 0 {
						ranked++
					}
				}
			}
			hs, errs := chain.Eval(got[i])
			wantHs, _ := chain.Eval(modelStandings(m, bs, chain.Boards(), member, now))
			if len(errs) > 0 || !slices.Equal(hs, wantHs) {
				t.Fatalf("%s hints %v (%v), on the model's numbers %v", member, hs, errs, wantHs)
			}
			if len(hs) > 0 && hs[0].Name != "welcome" {
				hinted++
			}
		}
	}
	if ranked == 0 || hinted == 0 {
		t.Fatalf("%d members: %d ranked standings, %d with a hint beyond welcome", len(members), ranked, hinted)
	}
	t.Logf("%d members, %d ranked standings, %d with hints", len(members), ranked, hinted)
}

// modelEntry is the model's entry of member in board bi's current period
// or window j at now; zero (but the member) when it is not ranked.
func modelEntry(m *boardmodel.Model, bi int, b *boarddef.Board, j int, member string, now time.Time) boardmodel.Entry {
	var ranking []boardmodel.Entry
	switch {
	case b.Kind() == boarddef.Periodic:
		ranking = m.Ranking(bi, b.Period(now).Label, 0)
	case b.Kind() == boarddef.Total:
		ranking = m.TotalRanking(bi, now)
	case b.HalfLife() > 0:
		ranking = m.RollingDecayRanking(bi, now)
	default:
		ranking = m.Ranking(bi, "", j)
	}
	for _, e := range ranking {
		if e.Member == member {
			return e
		}
	}
	return boardmodel.Entry{Member: member}
}

// modelStandings is member's standings on boards by the model.
func modelStandings(m *boardmodel.Model, bs []*boarddef.Board, boards []string, member string, now time.Time) board.MemberStandings {
	out := board.MemberStandings{Member: member}
	for _, name := range boards {
		for bi, b := range bs {
			if b.Name() != name {
				continue
			}
			got := board.Standings{Board: name}
			windows := b.Windows()
			if len(windows) == 0 {
				windows = []string{""}
			}
			for j, w := range windows {
				e := modelEntry(m, bi, b, j, member, now)
				got.Standings = append(got.Standings, board.Standing{Window: w, Rank: e.Rank, Total: e.Total, ReachedAt: e.ReachedAt})
			}
			out.Boards = append(out.Boards, got)
		}
	}
	return out
}
