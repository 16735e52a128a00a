package board

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
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
	Base      bool // a decay board: its time was below the board's base (decay.go)
}

// call is one script call: board bi's parts. A part k with done[k] nil is
// sent folded and applied or skipped whole; one with done[k] set (even
// empty) is sent event by event, without the events at offsets in done[k]
// (applied before), and the script applies each event whose offset it does
// not find applied.
//
// A call with remove events declares the keys they touch: slices holds
// the slice keys of a rolling board, read just before (removalPlan); a
// script that finds more refuses the call ("replan") and it is read and
// sent again.
//
// A rolling decay board's call is first sent without its slices; when its
// script is to move the base it answers "replan" (once per half-life), and
// the call is sent again with rebase set and the slices read and
// declared: the rebase rewrites every one (decay.go).
//
// A periodic board has one call per period (label set): its parts cover
// the batch's offsets like any other call's, but hold only that period's
// events and removals (periodCalls, registry.go).
type call struct {
	board  int
	label  string
	expire int64 // with label: when the period's slot expires (Unix ms, slotExpireAt)
	parts  []*part
	done   []ranges
	slices []string
	rebase bool
}

// removals reports whether c holds remove events.
func (c *call) removals() bool {
	for _, p := range c.parts {
		for _, e := range p.entries {
			if e.rm != nil {
				return true
			}
		}
	}
	return false
}

// sent reports whether entry e of part k is sent in the call.
func (c *call) sent(k int, e *entry) bool { return c.done[k] == nil || !c.done[k].contains(e.offset) }

// Apply writes a batch: one script call per board (all pipelined in one round
// trip), each guarded by the board's applied offset ranges per partition so
// that a redelivered record has no second effect, in whatever order ranges
// arrive. A periodic board has one call per period it touches (and its
// current period), each guarded by that period's ranges; a period met for
// the first time is registered first (registry.go). A part whose offsets
// were applied in part (a partial redelivery, or a replay that meets a
// range another log replayed) is re-sent event by event in a second round
// trip. A retried Apply of the same batch is
// harmless.
//
// It returns an error wrapping ranking.ErrRedisReset when a board's
// generation differs from the one adopted (the other boards' calls ran and
// are kept).
func (s *Store) Apply(ctx context.Context, b *Batch) (Result, error) {
	var res Result
	var calls []call
	b.seal()
	var periodic []int
	for bi, parts := range b.parts {
		if len(parts) == 0 {
			continue
		}
		if b.boards[bi].Kind() == boarddef.Periodic {
			periodic = append(periodic, bi)
			continue
		}
		calls = append(calls, call{board: bi, parts: parts, done: make([]ranges, len(parts))})
	}
	if len(periodic) > 0 {
		pc, err := s.periodCalls(ctx, b, periodic)
		if err != nil {
			return res, err
		}
		calls = append(calls, pc...)
	}
	var reset []string // the boards (and periods) whose generation differed
	for attempt := 0; len(calls) > 0; attempt++ {
		if attempt == 10 {
			// A part re-sent event by event is never refused, so this
			// is not reached.
			return res, fmt.Errorf("board: parts kept overlapping the applied ranges")
		}
		if err := s.removalPlan(ctx, b, calls); err != nil {
			return res, err
		}
		cmds, err := s.eval(ctx, applyLua, len(calls), func(k int) ([]string, []any) {
			return s.applyCall(b, &calls[k])
		})
		if err != nil {
			return res, err
		}
		var next []call
		for k, c := range cmds {
			bd := b.boards[calls[k].board]
			vals, err := c.Slice()
			if err != nil {
				return res, fmt.Errorf("board %s: apply: %w", bd.Name(), err)
			}
			if len(vals) == 1 && vals[0] == replyReset {
				name := bd.Name()
				if calls[k].label != "" {
					name += "@" + calls[k].label
				}
				reset = append(reset, name)
				continue
			}
			if len(vals) == 1 && vals[0] == replyReplan {
				// Its removals or its rebase met keys it had not declared.
				calls[k].rebase = bd.Kind() == boarddef.Rolling && bd.HalfLife() > 0
				next = append(next, calls[k])
				continue
			}
			again, err := parseApply(vals, &calls[k], bd, b.periods[calls[k].board], &res)
			if err != nil {
				return res, fmt.Errorf("board %s: apply: %w", bd.Name(), err)
			}
			if again != nil {
				next = append(next, *again)
			}
		}
		calls = next
	}
	if len(reset) > 0 {
		return res, fmt.Errorf("board: the generation of %s changed: %w", strings.Join(reset, ", "), ranking.ErrRedisReset)
	}
	return res, nil
}

// parseApply reads a script reply into res and returns the call that
// re-sends event by event the parts whose offsets were applied in part, if
// any.
func parseApply(vals []any, c *call, bd *boarddef.Board, periods map[int64]periodInfo, res *Result) (*call, error) {
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
		return nil, fmt.Errorf("unexpected reply of %d values %v", len(vals), vals)
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
			again = &call{board: c.board, label: c.label, expire: c.expire}
		}
		again.parts = append(again.parts, c.parts[pi])
		again.done = append(again.done, done)
		res.Splits++
	}
	nl := int(n(i))
	i++
	for range nl {
		// A rolling decay board's slice below the base comes with its
		// part index negated.
		pi, bucket, base := int(n(i))-1, n(i+1), false
		if pi < -1 {
			pi, base = -pi-2, true
		}
		label, _ := vals[i+1].(string) // periodic: the period's label
		i += 2
		p := c.parts[pi]
		for _, e := range p.entries {
			same := e.bucket == bucket
			if bd.Kind() == boarddef.Periodic {
				same = periods[e.bucket].label == label
			}
			if c.sent(pi, &e) && same {
				res.Late = append(res.Late, Late{Topic: p.topic, Partition: p.partition, Offset: e.offset, Board: bd.Name(), Event: e.event,
					Settled: bd.Kind() == boarddef.Periodic, Base: bd.Kind() == boarddef.Total || base})
			}
		}
	}
	return again, nil
}

// applyCall returns one call's keys and script arguments: entries folded
// per bucket and member, except those with an id, which are sent one by
// one, and except in parts re-sent event by event.
func (s *Store) applyCall(b *Batch, c *call) ([]string, []any) {
	bd := b.boards[c.board]
	P := s.callPrefix(bd, c)
	a := applyArgs{prefix: P, gen: s.gen, kind: scriptKind(bd), op: scriptOp(bd.Op()), tie: bd.FirstReached(), rb: bd.ReachedBits(),
		res: bd.TieResolution().Milliseconds(), maxTotal: bd.MaxTotal(), origin: bd.Epoch().UnixMilli(), windows: windowsArg(bd),
		floor: floorArg(bd), expire: c.expire, lengths: lengthsArg(bd), parts: make([]applyPart, len(c.parts))}
	if c.removals() && bd.Kind() == boarddef.Rolling {
		a.check = checkRemovals
	}
	if bd.HalfLife() > 0 {
		// The decayed sums are ranked as they are, below 2^53 (decay.go).
		a.maxTotal, a.halfLife, a.target = codec.MaxAmount, bd.HalfLife().Milliseconds(), bd.DecayTarget(s.now())
	}
	type fkey struct {
		bucket int64
		member string
	}
	for k, p := range c.parts {
		each := c.done[k] != nil
		var buckets []int64
		byBucket := map[int64][]entry{}
		folded := map[fkey]int{}
		ap := applyPart{tp: p.topic + "/" + strconv.Itoa(int(p.partition)), first: p.first, last: p.last, each: each}
		for _, e := range p.entries {
			if !c.sent(k, &e) {
				continue
			}
			if e.rm != nil {
				ap.removals = append(ap.removals, e)
				continue
			}
			list, seen := byBucket[e.bucket]
			if !seen {
				buckets = append(buckets, e.bucket)
			}
			if e.id == "" && !each {
				fk := fkey{e.bucket, e.member}
				if at, ok := folded[fk]; ok {
					list[at] = fold(bd.Op(), list[at], e)
					continue
				}
				folded[fk] = len(list)
			}
			byBucket[e.bucket] = append(list, e)
		}
		ap.buckets = make([]applyBucket, len(buckets))
		for i, bk := range buckets {
			ab := applyBucket{entries: byBucket[bk]}
			if bd.Kind() == boarddef.Periodic {
				pi := b.periods[c.board][bk]
				ab.bucket, ab.origin, ab.expire = pi.label, pi.start, pi.expireAt
			} else {
				ab.bucket = strconv.FormatInt(bk, 10)
				if bd.Kind() == boarddef.Total {
					ab.origin, ab.expire = bd.Epoch().UnixMilli(), totalIDsExpireAt(bd, bk)
				} else if bd.HalfLife() > 0 {
					// A rolling decay board's slice lies in one half-life.
					ab.origin = bd.HalfLifeOf(bd.SliceStart(bk))
				}
			}
			ap.buckets[i] = ab
		}
		a.parts[k] = ap
	}
	return s.applyKeys(P, bd, b, c), a.append(nil)
}

// scriptKind is board b's kind as the scripts take it (kindPeriod …).
func scriptKind(b *boarddef.Board) string {
	switch b.Kind() {
	case boarddef.Periodic:
		if b.ScoreHoldsState() {
			return kindCompact
		}
		return kindPeriod
	case boarddef.Total:
		return kindTotal
	case boarddef.Windows:
		return kindWindows // slices packed per member (lua/packed.lua)
	}
	return kindRolling
}

// scriptOp is op as apply.lua takes it: opIncr, opBest or opSet, which
// spell it as the configuration does (boarddef.Op.String).
func scriptOp(op boarddef.Op) string {
	switch op {
	case boarddef.Incr:
		return opIncr
	case boarddef.Best:
		return opBest
	case boarddef.Set:
		return opSet
	}
	return op.String()
}

// callPrefix returns the prefix P of call c's keys: the board's, or the
// period's own on a periodic board.
func (s *Store) callPrefix(bd *boarddef.Board, c *call) string {
	if bd.Kind() == boarddef.Periodic {
		return s.periodPrefix(bd, c.label)
	}
	return s.prefix(bd)
}

// applyKeys returns every key the apply script may touch for call c, the
// applied ranges' hash first. Redis Cluster checks only declared keys before a
// script runs: while a board's slot migrates key by key, a script with all
// its keys declared is refused whole (TRYAGAIN or ASK, and the batch is
// retried), where one that builds undeclared keys would fail half-way on
// the first key already moved, its earlier writes kept, and count them
// again on the retry.
func (s *Store) applyKeys(P string, bd *boarddef.Board, b *Batch, c *call) []string {
	keys := []string{P + "w", P + "n"}
	if bd.Kind() == boarddef.Periodic {
		keys = append(keys, P+"st")
	} else if bd.Kind() == boarddef.Total {
		keys = append(keys, P+"T:z", P+"T:m", P+"T:b")
	} else {
		keys = append(keys, P+"x", P+"m")
		if bd.Kind() == boarddef.Windows {
			keys = append(keys, expiryKey(P))
		}
		for _, q := range sliceSets(bd) {
			keys = append(keys, sliceSetKey(P, q))
		}
		for j := range bd.NumWindows() {
			keys = append(keys, windowKey(P, j))
		}
		if bd.HalfLife() > 0 {
			keys = append(keys, P+"b")
		}
	}
	seen := map[int64]bool{}
	labels := map[string]bool{}
	for k, p := range c.parts {
		for _, e := range p.entries {
			if e.rm != nil && c.sent(k, &e) {
				for _, l := range e.rm.labels {
					if !labels[l] {
						labels[l] = true
						keys = append(keys, s.periodKey(bd, l, "z"), s.periodKey(bd, l, "m"))
					}
				}
				continue
			}
			if !c.sent(k, &e) || seen[e.bucket] {
				continue
			}
			seen[e.bucket] = true
			if bd.Kind() == boarddef.Periodic {
				l := b.periods[c.board][e.bucket].label
				keys = append(keys, s.periodKey(bd, l, "z"), s.periodKey(bd, l, "m"), s.periodKey(bd, l, "i"))
			} else if bd.Kind() == boarddef.Total {
				keys = append(keys, P+"T:i:"+strconv.FormatInt(e.bucket, 10))
			} else if bd.Kind() == boarddef.Windows {
				for _, q := range sliceSets(bd) {
					keys = append(keys, idSetKey(P, q, floorDiv(e.bucket, q)))
				}
			} else {
				for _, q := range sliceSets(bd) {
					sk := sliceKey(P, q, floorDiv(e.bucket, q))
					keys = append(keys, sk, idSetKey(P, q, floorDiv(e.bucket, q)))
				}
			}
		}
	}
	if c.removals() || c.rebase {
		if bd.Kind() == boarddef.Periodic {
			keys = append(keys, P+"d", P+"S") // the period's deferred removals and snapshot
		}
		keys = append(keys, c.slices...)
	}
	return keys
}

// removalPlan reads, for every call with remove events, the keys they
// touch beyond those the events name: a rolling board's slices. It reads
// a rolling decay board's slices too when its call is to move the base
// (rebase). (A periodic board's call is one period's, whose snapshot
// applyKeys declares; a windows board's removals touch no slice key: a
// member's slices are in its state, lua/packed.lua.)
func (s *Store) removalPlan(ctx context.Context, b *Batch, calls []call) error {
	type read struct {
		k   int
		set string // the zset read: its members are suffixes of set+":"
		cmd *redis.StringSliceCmd
	}
	var reads []read
	pp := s.rdb.Pipeline()
	for k := range calls {
		bd := b.boards[calls[k].board]
		if (calls[k].removals() || calls[k].rebase) && bd.Kind() == boarddef.Rolling {
			calls[k].slices = nil
			for _, q := range sliceSets(bd) {
				set := sliceSetKey(s.prefix(bd), q)
				reads = append(reads, read{k, set, pp.ZRange(ctx, set, 0, -1)})
			}
		}
	}
	if len(reads) == 0 {
		return nil
	}
	if _, err := pp.Exec(ctx); err != nil && err != redis.Nil {
		return fmt.Errorf("board: removals: %w", err)
	}
	for _, r := range reads {
		for _, sl := range r.cmd.Val() {
			calls[r.k].slices = append(calls[r.k].slices, r.set+":"+sl)
		}
	}
	return nil
}

// floorArg is board b's floor as the scripts take it: "" for none.
func floorArg(b *boarddef.Board) string {
	floor, ok := b.Floor()
	if !ok {
		return ""
	}
	return strconv.FormatInt(floor, 10)
}

func boolArg(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// fold combines two events of one member in one bucket into one with the
// same effect under op. (A sum may be folded whatever the signs: the
// floor applies to the sum when it is read, never on the way.)
func fold(op boarddef.Op, a, e entry) entry {
	switch op {
	case boarddef.Incr:
		a.value += e.value
		a.ts = max(a.ts, e.ts)
	case boarddef.Best:
		if e.value > a.value || (e.value == a.value && e.ts < a.ts) {
			a.value, a.ts = e.value, e.ts
		}
	case boarddef.Set:
		if e.ts > a.ts || (e.ts == a.ts && e.value > a.value) {
			a.value, a.ts = e.value, e.ts
		}
	}
	return a
}
