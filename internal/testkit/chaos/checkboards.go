package chaos

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
)

// checkBoards feeds the boards' model (in.plain: the decay boards are
// CheckDecay's) with the input records that carry
// board events (remove events and values in tenths among them),
// partition by partition in offset order with their Kafka timestamps,
// exactly as a processor meets them, and compares every board with it. It
// returns the origins of the records with a late board event: they belong
// in the DLQ.
func checkBoards(ctx context.Context, rc redis.UniversalClient, inputs []*kgo.Record, in *Input, rep *Report) (map[origin]bool, error) {
	if len(in.plain) == 0 {
		return nil, nil
	}
	events := map[string][]codec.Event{}
	for _, r := range in.Trace {
		if r.Good() && slices.ContainsFunc(r.Events, func(e codec.Event) bool { return e.Type.Board() }) {
			events[string(r.Value)] = r.Events
		}
	}
	// The records before the clock record (settle.go) first, then the
	// model settles, then the records after it.
	after := func(r *kgo.Record) int {
		if in.SettleAt != nil && r.Offset >= in.SettleAt[[2]string{r.Topic, fmt.Sprint(r.Partition)}] {
			return 1
		}
		return 0
	}
	recs := slices.Clone(inputs)
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(after(a), after(b)), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	m, free := boardmodel.New(in.plain), boardmodel.New(in.plain)
	settle := !in.SettleClock.IsZero()
	if settle {
		m.Settle(in.SettleFirst)
		free.Settle(in.SettleFirst)
	}
	in.SettleSkip = map[string]bool{}
	settleAll := func() {
		for _, s := range m.Settle(in.SettleClock) {
			if s.ClosedAt <= in.SettleWall.UnixMilli() {
				in.SettleSkip[s.Board+"/"+s.Period] = true
			}
		}
		free.Settle(in.SettleClock)
		settle = false
	}
	in.removed = make([]map[string]bool, len(in.plain))
	for bi := range in.removed {
		in.removed[bi] = map[string]bool{}
	}
	late := map[origin]bool{}
	for _, r := range recs {
		if settle && after(r) == 1 {
			settleAll()
		}
		evs, ok := events[string(r.Value)]
		if !ok {
			continue
		}
		rep.BoardRecords++
		var kept []codec.Event // evs without its removals, for free
		for _, e := range evs {
			switch {
			case e.Type == codec.TypeRemove:
				rep.BoardRemoves++
				for bi, b := range in.plain {
					if b.Name() == e.Board {
						in.removed[bi][b.MemberOf(&e)] = true
					}
				}
				continue
			case e.Decimals > 0:
				rep.BoardDecimals++
			}
			kept = append(kept, e)
		}
		free.Record(r.Topic, r.Partition, r.Offset, r.Timestamp, kept)
		if len(m.Record(r.Topic, r.Partition, r.Offset, r.Timestamp, evs)) > 0 {
			late[originOf(r)] = true
			rep.BoardLate++
		}
	}
	if settle {
		settleAll()
	}
	in.boards, in.free = m, free
	return late, compareBoards(ctx, rc, in, rep)
}

// CheckExpiry expires every rolling and windows board without decay at at,
// in Redis and in the model, and compares those boards again (the decay
// boards: DecayCheck.At). It runs after Check, with the
// processors stopped: the wall-clock expiry they ran during the trace
// removed nothing (boards.yaml), this one is at a time the test chooses.
// It returns what Redis's expiry did.
func CheckExpiry(ctx context.Context, rc redis.UniversalClient, in *Input, at time.Time, rep *Report) (board.ExpireResult, error) {
	res, err := board.NewStore(rc, in.Env, in.plain).Expire(ctx, at)
	if err != nil {
		return res, fmt.Errorf("chaos: expire boards at %s: %w", at, err)
	}
	in.boards.Expire(at)
	in.free.Expire(at)
	return res, compareBoards(ctx, rc, in, rep)
}

// compareBoards compares every period of every periodic board (those the
// model counted and those Redis holds) and every window of the other boards,
// member by member: a member missing, or with a total or reached_at below
// the model's, is lost; one the model does not rank, or with a total or
// reached_at above the model's, is applied twice; a member at another rank
// with equal total and reached_at is a mismatch.
func compareBoards(ctx context.Context, rc redis.UniversalClient, in *Input, rep *Report) error {
	st := board.NewStore(rc, in.Env, in.plain)
	for bi, b := range in.plain {
		type target struct{ period, window string }
		var targets []target
		if b.Kind() == boarddef.Periodic {
			labels := in.boards.Periods(bi)
			// One hash tag per period, {name@label}: board/keys.go.
			prefix, suffix := "rostrum:"+in.Env+":board:{"+b.Name()+"@", "}:z"
			keys, err := scanKeys(ctx, rc, prefix+"*"+suffix)
			if err != nil {
				return fmt.Errorf("chaos: scan periods of %s: %w", b.Name(), err)
			}
			for _, k := range keys {
				if l := strings.TrimSuffix(strings.TrimPrefix(k, prefix), suffix); !slices.Contains(labels, l) {
					labels = append(labels, l)
				}
			}
			for _, l := range labels {
				targets = append(targets, target{period: l})
			}
		} else {
			for _, w := range b.Windows() {
				targets = append(targets, target{window: w})
			}
		}
		settled := map[string]bool{}
		if !in.SettleClock.IsZero() && b.Settles() {
			for _, st := range in.boards.SettledOf(bi) {
				settled[st.Period] = true
			}
		}
		for _, tg := range targets {
			if settled[tg.period] {
				// Compared as a snapshot (checkSettled): Redis lost its
				// data after the settlement, and a settled period's live
				// ranking is not rebuilt (its events replay as late,
				// docs/DESIGN.md §8 "Settled periods").
				continue
			}
			j, _ := b.Window(tg.window)
			want := in.boards.Ranking(bi, tg.period, j)
			got, err := readRanking(ctx, st, b.Name(), tg.period, tg.window)
			if err != nil {
				return err
			}
			rep.BoardRankings++
			what := fmt.Sprintf("board %s %s%s", b.Name(), tg.period, tg.window)
			if in.RemovalOrderLost && len(in.removed[bi]) > 0 {
				got, want = boundRemoved(what, got, want, in.free.Ranking(bi, tg.period, j), in.removed[bi], rep)
			}
			compareRanking(what, got, want, rep)
		}
	}
	return nil
}

// readRanking reads a whole ranking, page by page.
func readRanking(ctx context.Context, st *board.Store, name, period, window string) ([]boardmodel.Entry, error) {
	var out []boardmodel.Entry
	for {
		page, err := st.Top(ctx, name, period, window, len(out), board.MaxPage)
		if err != nil {
			return nil, fmt.Errorf("chaos: read board %s %s%s: %w", name, period, window, err)
		}
		for _, e := range page.Members {
			out = append(out, boardmodel.Entry(e))
		}
		if len(page.Members) < board.MaxPage {
			return out, nil
		}
	}
}

// compareRanking counts rank mismatches only in a ranking whose totals and
// reached times all agree: a wrong total moves every member between its old
// and new rank, and is counted once, as lost or applied twice.
func compareRanking(what string, got, want []boardmodel.Entry, rep *Report) {
	rep.BoardEntries += len(want)
	before := rep.Lost + rep.AppliedTwice
	var misranked []boardmodel.Entry
	byMember := map[string]boardmodel.Entry{}
	for _, g := range got {
		byMember[g.Member] = g
	}
	for _, w := range want {
		g, ok := byMember[w.Member]
		delete(byMember, w.Member)
		switch {
		case !ok:
			rep.Lost++
			rep.problem("%s: %s (total %d) missing from Redis", what, w.Member, w.Total)
		case g.Total < w.Total || g.Total == w.Total && g.ReachedAt < w.ReachedAt:
			rep.Lost++
			rep.problem("%s: %s has total %d reached at %d in Redis, below the model's %d at %d", what, w.Member, g.Total, g.ReachedAt, w.Total, w.ReachedAt)
		case g.Total > w.Total || g.ReachedAt > w.ReachedAt:
			rep.AppliedTwice++
			rep.problem("%s: %s has total %d reached at %d in Redis, above the model's %d at %d", what, w.Member, g.Total, g.ReachedAt, w.Total, w.ReachedAt)
		case g.Rank != w.Rank:
			misranked = append(misranked, g)
		}
	}
	for m, g := range byMember {
		rep.AppliedTwice++
		rep.problem("%s: %s (total %d) in Redis, not ranked by the model", what, m, g.Total)
	}
	if rep.Lost+rep.AppliedTwice == before {
		for _, g := range misranked {
			rep.Mismatch++
			rep.problem("%s: %s at rank %d in Redis, another in the model", what, g.Member, g.Rank)
		}
	}
}

// boundRemoved checks the members that remove events name against bounds
// that hold in any order of application (Input.RemovalOrderLost): absent
// from Redis, or with a total and reached time at most those they have
// with no removal (free); above them is applied twice. It returns both
// rankings without those members, ranks numbered again, for
// compareRanking. (Ranks around them are then compared among the others
// only.)
func boundRemoved(what string, got, want, free []boardmodel.Entry, removed map[string]bool, rep *Report) (g, w []boardmodel.Entry) {
	bound := map[string]boardmodel.Entry{}
	for _, f := range free {
		bound[f.Member] = f
	}
	drop := func(es []boardmodel.Entry, check bool) []boardmodel.Entry {
		var out []boardmodel.Entry
		for _, e := range es {
			if !removed[e.Member] {
				e.Rank = int64(len(out) + 1)
				out = append(out, e)
				continue
			}
			if !check {
				continue
			}
			rep.BoardBounded++
			if f, ok := bound[e.Member]; !ok || e.Total > f.Total || e.ReachedAt > f.ReachedAt {
				rep.AppliedTwice++
				rep.problem("%s: removed member %s has total %d reached at %d in Redis, above its %d at %d with no removal", what, e.Member, e.Total, e.ReachedAt, f.Total, f.ReachedAt)
			}
		}
		return out
	}
	return drop(got, true), drop(want, false)
}
