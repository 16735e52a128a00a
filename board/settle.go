package board

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/ranking"
)

// Settling closed periods (docs/DESIGN.md §8 "Settled periods").
//
// A period of a settling board closes when its end plus the board's grace
// has passed. Settle freezes it (apply.lua refuses its events from then on:
// they are late), copies its top SettleTop members into a snapshot page by
// page (settle.lua; SettlePage members per script call, so that a board of
// any size never blocks Redis for more than one page), and in the step that
// copies the last page writes the period's record into the board's outbox.
// The processor publishes outbox records (ClaimSettled) and acknowledges
// them once the broker has (AckSettled). Every step is recorded in Redis by
// the script that does it, so it happens once whoever calls it, however
// often, and a crash resumes where the last step ended.

// SettlePage is the most members one settle script call copies.
const SettlePage = 250

// SettleResult is what Settle did.
type SettleResult struct {
	Settled int // periods settled (records written into the outbox)
	Calls   int // settle script calls
}

// SettledRecord is one record of the outbox: the JSON value published on
// {env}.boards.settled with key Board/Period.
type SettledRecord struct {
	Board, Period string
	Value         []byte
}

// Key returns the record's Kafka key, "board/period".
func (r SettledRecord) Key() string { return r.Board + "/" + r.Period }

// SettledPage is a page of a settled snapshot.
type SettledPage struct {
	Board    string
	Period   string
	ClosedAt int64 // Unix ms: the period's end + grace
	Members  int64 // members ranked when the period was frozen
	Top      []Entry
}

// maxSettlePerCall bounds the periods one Settle call settles per board (a
// board that never settled starts with its last closed period, so only a
// long outage leaves more).
const maxSettlePerCall = 64

// Settle settles, on every settling board, each period closed at now (end +
// grace ≤ now) after the last settled one; a board that never settled
// starts with the last period closed at now. The processor calls it on a
// timer with the wall clock and after a batch whose record times passed a
// period's close. It returns an error wrapping ranking.ErrRedisReset when a
// board's generation differs from the one adopted.
func (s *Store) Settle(ctx context.Context, now time.Time) (SettleResult, error) {
	var res SettleResult
	for _, b := range s.boards {
		if !b.Settles() {
			continue
		}
		if err := s.settleBoard(ctx, b, now, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (s *Store) settleBoard(ctx context.Context, b *boarddef.Board, now time.Time, res *SettleResult) error {
	P := s.prefix(b)
	for range maxSettlePerCall {
		// The board's frozen mark is the newest period recorded
		// (settled.lua); the one after it is settled next, or is being
		// copied in its own slot.
		frozen, err := s.rdb.HGet(ctx, P+"st", fieldFrozen).Result()
		if err != nil && err != redis.Nil {
			return fmt.Errorf("board %s: settle: %w", b.Name(), err)
		}
		var p boarddef.Period
		switch {
		case frozen != "":
			f, err := b.ParsePeriod(frozen)
			if err != nil {
				return fmt.Errorf("board %s: settle: state names %w", b.Name(), err)
			}
			p = b.Period(f.End)
		default:
			cur := b.Period(now.Add(-b.Grace()))
			p = b.Period(cur.Start.Add(-time.Millisecond))
		}
		if p.End.Add(b.Grace()).After(now) {
			return nil // not closed yet
		}
		if err := s.settlePeriod(ctx, b, p, res); err != nil {
			return err
		}
	}
	return nil
}

// settlePeriod runs settle.lua for period p until it is settled: the
// period is copied in its own slot and recorded in the board's
// (recordSettled).
func (s *Store) settlePeriod(ctx context.Context, b *boarddef.Board, p boarddef.Period, res *SettleResult) error {
	Q, snap := s.periodPrefix(b, p.Label), s.snapKey(b, p.Label)
	keys := []string{Q + "w", Q + "st", Q + "z", Q + "m", snap, snap + ":j", snap + ":i", Q + "d"}
	// The period's hash must carry the generation: a period without
	// events was never registered.
	exp := slotExpireAt(b, b.KeptUntil(p).UnixMilli(), p.End.UnixMilli())
	if _, err := s.register(ctx, []periodRef{{b: b, label: p.Label, expire: exp}}); err != nil {
		return err
	}
	head, _ := json.Marshal(b.Name())
	per, _ := json.Marshal(p.Label)
	closedAt := p.End.Add(b.Grace()).UnixMilli()
	expireAt := s.snapExpireAt(b, p)
	a := settleArgs{gen: s.gen, label: p.Label, closedAt: closedAt, top: b.SettleTop(), page: s.page, expire: expireAt,
		start: p.Start.UnixMilli(), head: `{"board":` + string(head) + `,"period":` + string(per), scale: b.Scale(),
		floor: floorArg(b), reachedBits: compactArg(b), stateExpire: max(expireAt, b.KeptUntil(p).UnixMilli())}
	args := a.append(nil)
	for {
		cmds, err := s.eval(ctx, settleLua, 1, func(int) ([]string, []any) { return keys, args })
		if err != nil {
			return err
		}
		res.Calls++
		vals, err := cmds[0].Slice()
		if err != nil || len(vals) == 0 {
			return fmt.Errorf("board %s: settle %s: %v %w", b.Name(), p.Label, vals, err)
		}
		switch vals[0] {
		case replyReset:
			return fmt.Errorf("board %s: settle: %w", b.Name(), ranking.ErrRedisReset)
		case replyDone, replySettled:
			return s.recordSettled(ctx, b, p, res)
		case replyMore:
			continue
		}
		return fmt.Errorf("board %s: settle %s: unexpected reply %v", b.Name(), p.Label, vals)
	}
}

// recordSettled records period p once settle.lua copied it: the period's
// slot keeps the record (snapshot key ":j") until settled.lua, in the
// board's slot, has written it into the outbox (only while the board's
// frozen mark is below the label, moving the mark in the same step), then
// it is deleted. A crash before the
// delete leaves the copy, and the next call finds the mark and writes
// nothing; a crash before settled.lua ran leaves the copy for the next
// call to record. So the record is written once.
func (s *Store) recordSettled(ctx context.Context, b *boarddef.Board, p boarddef.Period, res *SettleResult) error {
	P := s.prefix(b)
	j := s.snapKey(b, p.Label) + ":j"
	record, err := s.rdb.Get(ctx, j).Result()
	if err != nil && err != redis.Nil {
		return fmt.Errorf("board %s: settle %s: %w", b.Name(), p.Label, err)
	}
	a := settledArgs{gen: s.gen, label: p.Label, record: record, start: p.Start.UnixMilli(), retention: b.SettleRetention()}
	cmds, err := s.eval(ctx, settledLua, 1, func(int) ([]string, []any) {
		return []string{P + "w", P + "st", P + "o", P + "SL"}, a.append(nil)
	})
	if err != nil {
		return err
	}
	switch v := cmds[0].Val(); v {
	case replyReset:
		return fmt.Errorf("board %s: settle: %w", b.Name(), ranking.ErrRedisReset)
	case int64(1):
		res.Settled++
	}
	if err := s.rdb.Del(ctx, j).Err(); err != nil {
		return fmt.Errorf("board %s: settle %s: %w", b.Name(), p.Label, err)
	}
	return nil
}

// compactArg is the reached bits settle.lua decodes board b's member
// states from ("" for a board whose member hash holds every state).
func compactArg(b *boarddef.Board) string {
	if !b.ScoreHoldsState() {
		return ""
	}
	return strconv.Itoa(b.ReachedBits())
}

// snapKey returns the key of the snapshot of board b's settled period
// label; its info is snapKey+":i", its record while it is copied
// snapKey+":j".
func (s *Store) snapKey(b *boarddef.Board, label string) string {
	return s.periodPrefix(b, label) + "S"
}

// snapExpireAt returns when the snapshot keys of b's period p expire:
// settle-retention periods after it, plus the grace.
func (s *Store) snapExpireAt(b *boarddef.Board, p boarddef.Period) int64 {
	return p.End.Add(time.Duration(b.SettleRetention())*b.Unit().MaxSpan() + b.Grace()).UnixMilli()
}

// ClaimSettled returns the outbox records of every settling board that no
// one has claimed within lease, claiming them for token until now + lease
// (at most 32 per board). The caller publishes them and calls AckSettled
// for each once the broker acknowledged it; a record not acknowledged
// within lease is claimed again (by this or another processor).
func (s *Store) ClaimSettled(ctx context.Context, token string, now time.Time, lease time.Duration) ([]SettledRecord, error) {
	var bs []*boarddef.Board
	for _, b := range s.boards {
		if b.Settles() {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil, nil
	}
	cmds, err := s.eval(ctx, outboxLua, len(bs), func(k int) ([]string, []any) {
		a := outboxArgs{action: outboxClaim, token: token, now: now.UnixMilli(), lease: lease.Milliseconds()}
		return []string{s.prefix(bs[k]) + "o"}, a.append(nil)
	})
	if err != nil {
		return nil, err
	}
	var out []SettledRecord
	for k, c := range cmds {
		vals, err := c.StringSlice()
		if err != nil {
			return nil, fmt.Errorf("board %s: claim settled: %w", bs[k].Name(), err)
		}
		for i := 0; i+1 < len(vals); i += 2 {
			out = append(out, SettledRecord{Board: bs[k].Name(), Period: vals[i], Value: []byte(vals[i+1])})
		}
	}
	return out, nil
}

// AckSettled removes a published record from its board's outbox.
func (s *Store) AckSettled(ctx context.Context, r SettledRecord) error {
	b, ok := s.byName[r.Board]
	if !ok {
		return fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, r.Board)
	}
	if _, err := s.eval(ctx, outboxLua, 1, func(int) ([]string, []any) {
		a := outboxArgs{action: outboxAck, label: r.Period}
		return []string{s.prefix(b) + "o"}, a.append(nil)
	}); err != nil {
		return fmt.Errorf("board %s: ack settled %s: %w", r.Board, r.Period, err)
	}
	return nil
}

// SettledPeriods returns the labels of a board's settled periods still
// kept, newest first.
func (s *Store) SettledPeriods(ctx context.Context, board string) ([]string, error) {
	b, ok := s.byName[board]
	if !ok {
		return nil, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, board)
	}
	if !b.Settles() {
		return nil, fmt.Errorf("%w: board %s does not settle its periods", boarddef.ErrUnknownPeriod, board)
	}
	out, err := s.rdb.ZRevRange(ctx, s.prefix(b)+"SL", 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("board %s: settled periods: %w", board, err)
	}
	return out, nil
}

// Settled returns n members (1..MaxPage) from rank offset+1 of a settled
// period's snapshot ("" is the newest settled period). Errors:
// ErrUnknownBoard, ErrBadParam, ErrUnknownPeriod (not settled yet, or no
// longer kept).
func (s *Store) Settled(ctx context.Context, board, period string, offset, n int) (SettledPage, error) {
	if offset < 0 {
		return SettledPage{}, fmt.Errorf("%w: offset %d must not be negative", boarddef.ErrBadParam, offset)
	}
	if n < 1 || n > MaxPage {
		return SettledPage{}, fmt.Errorf("%w: n %d must be between 1 and %d", boarddef.ErrBadParam, n, MaxPage)
	}
	b, ok := s.byName[board]
	if !ok {
		return SettledPage{}, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, board)
	}
	if b.Kind() != boarddef.Periodic || !b.Settles() {
		return SettledPage{}, fmt.Errorf("%w: board %s does not settle its periods", boarddef.ErrBadParam, board)
	}
	P := s.prefix(b)
	if period == "" {
		l, err := s.rdb.ZRevRange(ctx, P+"SL", 0, 0).Result()
		if err != nil {
			return SettledPage{}, fmt.Errorf("board %s: settled: %w", board, err)
		}
		if len(l) == 0 {
			return SettledPage{}, fmt.Errorf("%w: board %s has no settled period yet", boarddef.ErrUnknownPeriod, board)
		}
		period = l[0]
	} else if _, err := b.ParsePeriod(period); err != nil {
		return SettledPage{}, err
	}
	pp := s.rdb.Pipeline()
	info := pp.Get(ctx, s.snapKey(b, period)+":i")
	list := pp.LRange(ctx, s.snapKey(b, period), int64(offset), int64(offset+n-1))
	if _, err := pp.Exec(ctx); err != nil && err != redis.Nil {
		return SettledPage{}, fmt.Errorf("board %s: settled %s: %w", board, period, err)
	}
	if info.Err() == redis.Nil {
		return SettledPage{}, fmt.Errorf("%w: %s of board %s is not settled (yet, or no longer kept: %d settled periods are)",
			boarddef.ErrUnknownPeriod, period, board, b.SettleRetention())
	}
	out := SettledPage{Board: board, Period: period, Top: []Entry{}}
	f := strings.Fields(info.Val())
	if len(f) == 2 {
		out.Members, _ = strconv.ParseInt(f[0], 10, 64)
		out.ClosedAt, _ = strconv.ParseInt(f[1], 10, 64)
	}
	for i, v := range list.Val() {
		e, err := parseSnapshotEntry(v)
		if err != nil {
			return SettledPage{}, fmt.Errorf("board %s: settled %s: %w", board, period, err)
		}
		e.Rank = int64(offset + i + 1)
		out.Top = append(out.Top, e)
	}
	return out, nil
}

// parseSnapshotEntry reads "total reached member".
func parseSnapshotEntry(v string) (Entry, error) {
	t, rest, ok1 := strings.Cut(v, " ")
	r, m, ok2 := strings.Cut(rest, " ")
	total, err1 := strconv.ParseFloat(t, 64)
	reached, err2 := strconv.ParseFloat(r, 64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil {
		return Entry{}, fmt.Errorf("malformed snapshot entry %q", v)
	}
	return Entry{Member: m, Total: int64(total), ReachedAt: int64(reached)}, nil
}
