package board

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rostrumhq/rostrum/ranking"
)

// Result is what Apply did.
type Result struct {
	Late       []Late // records with events that the scripts found late
	Applied    int    // board events counted (after the applied ranges and id de-duplication)
	Skipped    int    // parts skipped whole: their offsets were applied before
	Duplicate  int    // events not counted because their id was counted before
	Splits     int    // parts re-sent event by event: their offsets were applied in part
	Saturated  int    // score updates whose total exceeded the board's max-total
	GapsClosed int    // gaps between applied ranges closed to keep at most 64 per partition
}

// Late names a record that had an event a board found late in Redis: its
// slice had already left every window, or its period was settled. (Batch.Add catches most late events
// earlier, from the record time.)
type Late struct {
	Topic     string
	Partition int32
	Offset    int64
	Board     string
	Event     int  // index of the event in the record
	Settled   bool // its period was settled (else its slice had left every window)
}

// call is one script call: board bi's parts. A part k with done[k] nil is
// sent folded and applied or skipped whole; one with done[k] set (even
// empty) is sent event by event, without the events at offsets in done[k]
// (applied before), and the script applies each event whose offset it does
// not find applied.
type call struct {
	board int
	parts []*part
	done  []ranges
}

// sent reports whether entry e of part k is sent in the call.
func (c *call) sent(k int, e *entry) bool { return c.done[k] == nil || !c.done[k].contains(e.offset) }

// Apply writes a batch: one script call per board (all pipelined in one round
// trip), each guarded by the board's applied offset ranges per partition so
// that a redelivered record has no second effect, in whatever order ranges
// arrive. A part whose offsets were applied in part (a partial redelivery,
// or a replay that meets a range another log replayed) is re-sent event by
// event in a second round trip. A retried Apply of the same batch is
// harmless.
//
// It returns an error wrapping ranking.ErrRedisReset when a board's
// generation differs from the one adopted (the other boards' calls ran and
// are kept).
func (s *Store) Apply(ctx context.Context, b *Batch) (Result, error) {
	var res Result
	var calls []call
	b.seal()
	for bi, parts := range b.parts {
		if len(parts) == 0 {
			continue
		}
		calls = append(calls, call{board: bi, parts: parts, done: make([]ranges, len(parts))})
	}
	reset := false
	for attempt := 0; len(calls) > 0; attempt++ {
		if attempt == 10 {
			// A part re-sent event by event is never refused, so this
			// is not reached.
			return res, fmt.Errorf("board: parts kept overlapping the applied ranges")
		}
		cmds, err := s.eval(ctx, applyLua, len(calls), func(k int) ([]string, []any) {
			return s.applyArgs(b, &calls[k])
		})
		if err != nil {
			return res, err
		}
		var next []call
		for k, c := range cmds {
			bd := b.boards[calls[k].board]
			vals, err := c.Slice()
			if err != nil {
				return res, fmt.Errorf("board %s: apply: %w", bd.name, err)
			}
			if len(vals) == 1 && vals[0] == "reset" {
				reset = true
				continue
			}
			again, err := parseApply(vals, &calls[k], bd, b.periods[calls[k].board], &res)
			if err != nil {
				return res, fmt.Errorf("board %s: apply: %w", bd.name, err)
			}
			if again != nil {
				next = append(next, *again)
			}
		}
		calls = next
	}
	if reset {
		return res, fmt.Errorf("board: a board's generation changed: %w", ranking.ErrRedisReset)
	}
	return res, nil
}

// parseApply reads a script reply into res and returns the call that
// re-sends event by event the parts whose offsets were applied in part, if
// any.
func parseApply(vals []any, c *call, bd *Board, periods map[int64]periodInfo, res *Result) (*call, error) {
	n := func(i int) int64 {
		if i >= len(vals) {
			return 0
		}
		switch v := vals[i].(type) {
		case int64:
			return v
		case string:
			x, _ := strconv.ParseInt(v, 10, 64)
			return x
		}
		return 0
	}
	if len(vals) < 7 {
		return nil, fmt.Errorf("unexpected reply of %d values", len(vals))
	}
	res.Applied += int(n(0))
	res.Skipped += int(n(1))
	res.Duplicate += int(n(2))
	res.Saturated += int(n(3))
	res.GapsClosed += int(n(4))
	i := 5
	ns := int(n(i))
	i++
	var again *call
	for range ns {
		pi := int(n(i)) - 1
		sv, _ := vals[i+1].(string)
		done, err := parseRanges(sv)
		if err != nil {
			return nil, err
		}
		if done == nil {
			done = ranges{} // re-sent event by event all the same
		}
		i += 2
		if again == nil {
			again = &call{board: c.board}
		}
		again.parts = append(again.parts, c.parts[pi])
		again.done = append(again.done, done)
		res.Splits++
	}
	nl := int(n(i))
	i++
	for range nl {
		pi, bucket := int(n(i))-1, n(i+1)
		label, _ := vals[i+1].(string) // periodic: the period's label
		i += 2
		p := c.parts[pi]
		for _, e := range p.entries {
			same := e.bucket == bucket
			if bd.kind == Periodic {
				same = periods[e.bucket].label == label
			}
			if c.sent(pi, &e) && same {
				res.Late = append(res.Late, Late{Topic: p.topic, Partition: p.partition, Offset: e.offset, Board: bd.name, Event: e.event,
					Settled: bd.kind == Periodic})
			}
		}
	}
	return again, nil
}

// applyArgs renders one call's script arguments: entries folded per bucket
// and member, except those with an id, which are sent one by one, and
// except in parts re-sent event by event.
func (s *Store) applyArgs(b *Batch, c *call) ([]string, []any) {
	bd := b.boards[c.board]
	P := s.prefix(bd)
	kind := "r"
	if bd.kind == Periodic {
		kind = "p"
	}
	tie := "0"
	if bd.firstReached {
		tie = "1"
	}
	args := []any{P, s.gen, kind, bd.op.String(), tie, bd.rb, bd.res.Milliseconds(), bd.maxTotal,
		bd.epoch.UnixMilli(), len(bd.windows), len(c.parts)}
	type fkey struct {
		bucket int64
		member string
	}
	for k, p := range c.parts {
		each := c.done[k] != nil
		var buckets []int64
		byBucket := map[int64][]entry{}
		folded := map[fkey]int{}
		for _, e := range p.entries {
			if !c.sent(k, &e) {
				continue
			}
			list, seen := byBucket[e.bucket]
			if !seen {
				buckets = append(buckets, e.bucket)
			}
			if e.id == "" && !each {
				fk := fkey{e.bucket, e.member}
				if at, ok := folded[fk]; ok {
					list[at] = fold(bd.op, list[at], e)
					continue
				}
				folded[fk] = len(list)
			}
			byBucket[e.bucket] = append(list, e)
		}
		flag := 0
		if each {
			flag = 1
		}
		args = append(args, p.topic+"/"+strconv.Itoa(int(p.partition)), p.first, p.last, flag, len(buckets))
		for _, bk := range buckets {
			list := byBucket[bk]
			if bd.kind == Periodic {
				pi := b.periods[c.board][bk]
				args = append(args, pi.label, pi.start, pi.expireAt, len(list))
			} else {
				args = append(args, bk, 0, 0, len(list))
			}
			for _, e := range list {
				args = append(args, e.member, e.value, e.ts, e.id, e.offset)
			}
		}
	}
	return applyKeys(P, bd, b, c), args
}

// applyKeys returns every key the apply script may touch for call c, the
// applied ranges' hash first. Redis Cluster checks only declared keys before a
// script runs: while a board's slot migrates key by key, a script with all
// its keys declared is refused whole (TRYAGAIN or ASK, and the batch is
// retried), where one that builds undeclared keys would fail half-way on
// the first key already moved, its earlier writes kept, and count them
// again on the retry.
func applyKeys(P string, bd *Board, b *Batch, c *call) []string {
	keys := []string{P + "w", P + "n"}
	if bd.kind == Periodic {
		keys = append(keys, P+"st")
	} else {
		keys = append(keys, P+"x", P+"s", P+"m")
		for j := range bd.windows {
			keys = append(keys, P+"z:"+strconv.Itoa(j))
		}
	}
	seen := map[int64]bool{}
	for k, p := range c.parts {
		for _, e := range p.entries {
			if !c.sent(k, &e) || seen[e.bucket] {
				continue
			}
			seen[e.bucket] = true
			if bd.kind == Periodic {
				base := P + "p:" + b.periods[c.board][e.bucket].label + ":"
				keys = append(keys, base+"z", base+"m", base+"i")
			} else {
				sk := P + "s:" + strconv.FormatInt(e.bucket, 10)
				keys = append(keys, sk, sk+":i")
			}
		}
	}
	return keys
}

// fold combines two events of one member in one bucket into one with the
// same effect under op.
func fold(op Op, a, e entry) entry {
	switch op {
	case Incr:
		a.value += e.value
		a.ts = max(a.ts, e.ts)
	case Best:
		if e.value > a.value || (e.value == a.value && e.ts < a.ts) {
			a.value, a.ts = e.value, e.ts
		}
	case Set:
		if e.ts > a.ts || (e.ts == a.ts && e.value > a.value) {
			a.value, a.ts = e.value, e.ts
		}
	}
	return a
}
