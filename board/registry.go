package board

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Periodic boards keep one hash tag per period (docs/DESIGN.md §8 "Boards
// over a Redis Cluster").
//
// Each period keeps its own applied ranges and generation, so each
// (board, period) call of a batch is atomic and idempotent on its own: a
// batch with events of two periods runs two scripts, and a crash between
// them is repaired by redelivery or the log replay, each period skipping
// what it applied already.
//
// Generation. A cluster node can lose one period's keys alone, and a
// period whose keys are missing looks like a period never written. The
// environment's registry (registryKey, on the slot of the generation
// marker: "<board>@<label>" → the Unix ms its slot expires) tells them
// apart: a period is registered before its first write, and only a
// registration that added the label stamps the period's hash with the
// adopted generation (HSETNX "gen"). apply.lua refuses a period hash
// without that generation ('reset', ranking.ErrRedisReset), so a period
// that lost its keys makes the processor adopt again and replay its log,
// as a board that lost its keys does. Adopt stamps every registered
// period whose slot is not expired yet (adoptPeriods).
//
//   - A crash between the registration and the stamp leaves a registered
//     period without a generation: its next call answers 'reset', and the
//     Adopt that follows stamps it.
//   - Two processors registering one label: one adds it and stamps; the
//     other finds it and does not. If its call runs before the stamp it
//     answers 'reset': that processor adopts (stamping the period) and
//     replays its log, which the applied ranges make harmless.
//   - The registry's node lost its data: it lost the generation marker
//     too, so every processor adopts a new generation (which stamps the
//     periods registered since, overwriting) and replays its log; a
//     period that kept its keys but not its registration is refused
//     (its generation is the old one) until a registration lists it and
//     an Adopt stamps it. Stamping a registration that added its label
//     with HSETNX leaves the old generation of such a period, so it stays
//     refused until then, never counted on without its replay.
//
// The store remembers the labels it registered (known), so registration is
// one extra round trip per new period per process, plus a second for
// the stamps when a label was new. Adopt forgets them.

// registered reports whether the store registered board b's period label.
func (s *Store) registered(b *boarddef.Board, label string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.known[b.Name()+"@"+label]
}

func (s *Store) remember(b *boarddef.Board, label string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.known) > 1<<16 { // a cache: forgetting costs one round trip
		clear(s.known)
	}
	s.known[b.Name()+"@"+label] = true
}

// periodCalls returns the calls of the periodic boards bs (board
// indexes) of batch b: one per period the batch has events or removals of,
// plus the period of the batch's newest record time (Batch.newest), each
// with every part of the board (its covered offsets) but only that
// period's entries. The current period gets the covered offsets of batches
// without events of its own so that its applied ranges stay one range per
// partition. Periods not registered yet are registered first (see above);
// a period that only removals name and that was never registered holds no
// keys and gets no call.
//
// Offsets sent to one period's ranges and not another's never hold an
// event of the other: an event's period is a function of its event time,
// and a removal lists its periods, so a record with an event or removal
// of a period is sent to it with its batch. A gap in a period's ranges is
// therefore offsets without its events (safe to close) or offsets still to
// be replayed.
func (s *Store) periodCalls(ctx context.Context, b *Batch, bs []int) ([]call, error) {
	type want struct {
		bi     int
		label  string
		expire int64 // its slot's expiry (slotExpireAt): 0 for a label only removals name
	}
	var order []want
	seen := map[string]int{}
	add := func(bi int, label string, expire int64) {
		k := strconv.Itoa(bi) + "@" + label
		if i, ok := seen[k]; ok {
			order[i].expire = max(order[i].expire, expire)
			return
		}
		seen[k] = len(order)
		order = append(order, want{bi, label, expire})
	}
	snaps, err := s.settledLabels(ctx, b, bs)
	if err != nil {
		return nil, err
	}
	for _, bi := range bs {
		for _, p := range b.parts[bi] {
			for _, e := range p.entries {
				if e.rm != nil {
					for _, l := range e.rm.labels {
						add(bi, l, 0)
					}
					if e.rm.settled {
						for l := range snaps[bi] {
							add(bi, l, 0)
						}
					}
					continue
				}
				pi := b.periods[bi][e.bucket]
				add(bi, pi.label, slotExpireAt(b.boards[bi], pi.expireAt, pi.end))
			}
		}
		if b.newest != 0 {
			pi := b.period(bi, b.newest)
			add(bi, pi.label, slotExpireAt(b.boards[bi], pi.expireAt, pi.end))
		}
	}

	refs := make([]periodRef, len(order))
	for i, w := range order {
		refs[i] = periodRef{b: b.boards[w.bi], label: w.label, expire: w.expire}
	}
	ok, err := s.register(ctx, refs)
	if err != nil {
		return nil, err
	}

	var calls []call
	for i, w := range order {
		if !ok[i] {
			continue // never created: nothing to remove
		}
		parts := periodParts(b, w.bi, w.label, snaps[w.bi][w.label])
		exp := w.expire
		if exp == 0 {
			bd := b.boards[w.bi]
			p, _ := bd.ParsePeriod(w.label) // a label Batch.Add built, or the index of settled periods holds
			exp = slotExpireAt(bd, bd.KeptUntil(p).UnixMilli(), p.End.UnixMilli())
		}
		calls = append(calls, call{board: w.bi, label: w.label, expire: exp, parts: parts, done: make([]ranges, len(parts))})
	}
	return calls, nil
}

// periodParts returns board bi's parts of batch b restricted to period
// label: the same offsets, the entries of that period, and the removals
// that reach it: those that list it (listing only it), and those that
// also remove from settled snapshots when the period is settled (snap) or
// listed (it may be the period being copied, which defers the removal).
// The parts themselves when they hold nothing else (the common batch: one
// period, no removal).
func periodParts(b *Batch, bi int, label string, snap bool) []*part {
	parts := b.parts[bi]
	all := true
	for _, p := range parts {
		for k := range p.entries {
			e := &p.entries[k]
			all = all && e.rm == nil && b.periods[bi][e.bucket].label == label
		}
	}
	if all {
		return parts
	}
	out := make([]*part, len(parts))
	for k, p := range parts {
		np := &part{topic: p.topic, partition: p.partition, first: p.first, last: p.last}
		for _, e := range p.entries {
			if e.rm != nil {
				rm := &removal{}
				if slices.Contains(e.rm.labels, label) {
					rm.labels = []string{label}
				}
				rm.settled = e.rm.settled && (snap || rm.labels != nil)
				if rm.labels != nil || rm.settled {
					e.rm = rm
					np.entries = append(np.entries, e)
				}
				continue
			}
			if b.periods[bi][e.bucket].label == label {
				np.entries = append(np.entries, e)
			}
		}
		out[k] = np
	}
	return out
}

// settledLabels reads the settled periods kept (SL) of the boards among bs
// that have a removal from settled snapshots in batch b: such a removal
// goes to each of them, in its own slot.
func (s *Store) settledLabels(ctx context.Context, b *Batch, bs []int) (map[int]map[string]bool, error) {
	cmds := map[int]*redis.StringSliceCmd{}
	pp := s.rdb.Pipeline()
	for _, bi := range bs {
	parts:
		for _, p := range b.parts[bi] {
			for _, e := range p.entries {
				if e.rm != nil && e.rm.settled && b.boards[bi].Settles() {
					cmds[bi] = pp.ZRange(ctx, s.prefix(b.boards[bi])+"SL", 0, -1)
					break parts
				}
			}
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pp.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("board: removals: settled periods: %w", err)
	}
	out := map[int]map[string]bool{}
	for bi, c := range cmds {
		out[bi] = map[string]bool{}
		for _, l := range c.Val() {
			out[bi][l] = true
		}
	}
	return out, nil
}

// periodRef names a period of a periodic board for register:
// expire is when its keys expire (Unix ms), 0 to look it up only.
type periodRef struct {
	b      *boarddef.Board
	label  string
	expire int64
}

// register registers the periods refs names that the store does not know
// yet (ZADD NX into the registry; those with expire 0 are only looked
// up), stamps those the registration added with the adopted generation,
// and reports for each whether it is registered now.
func (s *Store) register(ctx context.Context, refs []periodRef) ([]bool, error) {
	ok := make([]bool, len(refs))
	type reg struct {
		i    int
		add  *redis.IntCmd   // ZADD NX: 1 when the label was new
		find *redis.FloatCmd // ZSCORE of a label only looked up
	}
	var regs []reg
	pp := s.rdb.Pipeline()
	for i, r := range refs {
		if s.registered(r.b, r.label) {
			ok[i] = true
			continue
		}
		key, member := s.registryKey(), registryMember(r.b, r.label)
		if r.expire == 0 {
			regs = append(regs, reg{i: i, find: pp.ZScore(ctx, key, member)})
		} else {
			regs = append(regs, reg{i: i, add: pp.ZAddNX(ctx, key, redis.Z{Score: float64(r.expire), Member: member})})
		}
	}
	if len(regs) == 0 {
		return ok, nil
	}
	// Registrations whose slot expired go with the new ones (the wall
	// clock: Redis expires the keys by its own).
	pp.ZRemRangeByScore(ctx, s.registryKey(), "-inf", "("+strconv.FormatInt(time.Now().UnixMilli(), 10))
	if _, err := pp.Exec(ctx); err != nil && err != redis.Nil {
		return nil, fmt.Errorf("board: register periods: %w", err)
	}
	stamp := s.rdb.Pipeline()
	stamps := 0
	for _, g := range regs {
		r := refs[g.i]
		if g.find != nil {
			ok[g.i] = g.find.Err() == nil
			continue
		}
		ok[g.i] = true
		if g.add.Val() == 1 && s.gen != "" {
			stamp.HSetNX(ctx, s.periodKey(r.b, r.label, "w"), fieldGen, s.gen)
			stamps++
		}
	}
	if stamps > 0 {
		if _, err := stamp.Exec(ctx); err != nil {
			return nil, fmt.Errorf("board: stamp new periods: %w", err)
		}
	}
	for i, r := range refs {
		if ok[i] {
			s.remember(r.b, r.label)
		}
	}
	return ok, nil
}

// adoptPeriods stamps, on every periodic board, each registered
// period whose slot is not expired at now with generation gen, and drops
// the registrations that expired. The store forgets the labels it
// registered, so that a period that lost its registration registers
// again.
//
// The stamp overwrites (HSET): a registration stamps with the generation
// the store adopted last, which is stale when Redis lost everything since
// (the registry too, so the label was new) and the processor has not
// noticed yet; the period then carries the old generation, and HSETNX
// would leave it there, refusing every call for good. Overwriting is safe
// because the adopting processor replays its log next, and a processor
// still on an older generation is refused and adopts in turn.
func (s *Store) adoptPeriods(ctx context.Context, gen string, now time.Time) error {
	s.mu.Lock()
	clear(s.known)
	s.mu.Unlock()
	periodic := false
	for _, b := range s.boards {
		periodic = periodic || b.Kind() == boarddef.Periodic
	}
	if !periodic {
		return nil
	}
	ms := strconv.FormatInt(now.UnixMilli(), 10)
	pp := s.rdb.Pipeline()
	pp.ZRemRangeByScore(ctx, s.registryKey(), "-inf", "("+ms)
	cmd := pp.ZRangeByScore(ctx, s.registryKey(), &redis.ZRangeBy{Min: ms, Max: "+inf"})
	if _, err := pp.Exec(ctx); err != nil {
		return fmt.Errorf("board: adopt generation: read the period registry: %w", err)
	}
	stamp := s.rdb.Pipeline()
	n := 0
	for _, m := range cmd.Val() {
		name, label, _ := strings.Cut(m, "@")
		if b, ok := s.byName[name]; ok && b.Kind() == boarddef.Periodic {
			stamp.HSet(ctx, s.periodKey(b, label, "w"), fieldGen, gen)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	if _, err := stamp.Exec(ctx); err != nil {
		return fmt.Errorf("board: adopt generation: stamp periods: %w", err)
	}
	return nil
}

// periodLabels returns the labels of board b's registered periods whose
// slot is not expired at now.
func (s *Store) periodLabels(ctx context.Context, b *boarddef.Board, now time.Time) ([]string, error) {
	all, err := s.rdb.ZRangeByScore(ctx, s.registryKey(), &redis.ZRangeBy{Min: strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range all {
		if label, ok := strings.CutPrefix(m, b.Name()+"@"); ok {
			out = append(out, label)
		}
	}
	return out, nil
}

// periodCounters sums the counters of a periodic board's periods not
// expired at now.
func (s *Store) periodCounters(ctx context.Context, b *boarddef.Board, now time.Time, fields ...string) ([]int64, error) {
	labels, err := s.periodLabels(ctx, b, now)
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(fields))
	if len(labels) == 0 {
		return out, nil
	}
	pp := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(labels))
	for k, l := range labels {
		cmds[k] = pp.HMGet(ctx, s.periodKey(b, l, "n"), fields...)
	}
	if _, err := pp.Exec(ctx); err != nil {
		return nil, err
	}
	for _, c := range cmds {
		for i, v := range c.Val() {
			sv, _ := v.(string)
			n, _ := strconv.ParseInt(sv, 10, 64)
			out[i] += n
		}
	}
	return out, nil
}
