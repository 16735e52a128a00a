package board

import (
	"fmt"
	"math"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
)

// Batch collects the board events of one poll batch, per board and
// topic-partition, for Store.Apply. It is reused from batch to batch (Reset)
// and is not safe for concurrent use.
type Batch struct {
	boards  []*boarddef.Board
	parts   [][]*part // per board: its topic-partition parts, in order of first appearance
	index   []map[partKey]int
	periods []map[int64]periodInfo // per periodic board: the periods of this batch by key
	last    []periodInfo           // per board: the period looked up last (a batch mostly hits one)
	events  int
	free    []*part
	covers  []cover // per topic-partition: the offsets the batch read (Cover)
	coverIx map[partKey]int
	// newest is the newest record time added (Unix ms; the newest event
	// time of records added without one), 0 for none: its period is the
	// current one of a periodic board, which gets the batch's
	// covered offsets even without events of its own (periodCalls).
	newest int64
}

// cover is the range of offsets a batch read from one topic-partition.
type cover struct {
	key         partKey
	first, last int64
}

type partKey struct {
	topic     string
	partition int32
}

// part is one topic-partition's share of a board's events in a batch, kept
// unfolded (one entry per counted event) so that a part overlapping the
// applied ranges can be re-sent event by event. first..last is the range of
// offsets the part marks applied: its events' and, after seal, the whole
// range the batch read from the partition, events or not.
type part struct {
	topic       string
	partition   int32
	first, last int64
	entries     []entry
}

// entry is one counted event, or a remove event (rm set).
type entry struct {
	offset int64
	bucket int64 // period key, slice index or total bucket (decay.go); noBucket for a remove
	member string
	value  int64 // units of 1/scale (decay boards: times the weight's mantissa, boarddef/decay.go)
	ts     int64
	id     string
	event  int      // index in its record
	rm     *removal // a remove event: always the first entry of its part
}

// removal is what a remove event takes the member out of: a periodic
// board's periods labels (the event's period and the Retention before it;
// a rolling board's windows and slices need no list), and with settled
// its settled snapshots.
type removal struct {
	settled bool
	labels  []string
}

// noBucket is the bucket of a remove entry: it matches no period or slice.
const noBucket = math.MinInt64

// periodInfo is what the scripts need of a period: its label, its start
// (the first-reached origin) and when its keys expire.
type periodInfo struct {
	key      int64
	label    string
	start    int64
	end      int64
	expireAt int64
	ok       bool
}

// NewBatch returns an empty batch for boards.
func NewBatch(boards []*boarddef.Board) *Batch {
	b := &Batch{boards: boards, parts: make([][]*part, len(boards)), index: make([]map[partKey]int, len(boards)),
		periods: make([]map[int64]periodInfo, len(boards)), last: make([]periodInfo, len(boards)),
		coverIx: map[partKey]int{}}
	for i := range b.index {
		b.index[i] = map[partKey]int{}
		b.periods[i] = map[int64]periodInfo{}
	}
	return b
}

// ResetKeepCovers empties the batch of its board events but keeps the
// offsets covered so far, so that a batch without board events can hand its
// coverage to the next one instead of being applied on its own.
func (b *Batch) ResetKeepCovers() {
	covers := b.covers
	ix := b.coverIx
	newest := b.newest
	b.covers, b.coverIx = nil, map[partKey]int{}
	b.Reset()
	b.covers, b.coverIx, b.newest = covers, ix, newest
}

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	for i := range b.parts {
		for _, p := range b.parts[i] {
			p.entries = p.entries[:0]
			b.free = append(b.free, p)
		}
		b.parts[i] = b.parts[i][:0]
		clear(b.index[i])
		if len(b.periods[i]) > 1024 { // a cache: keep it small
			clear(b.periods[i])
			b.last[i] = periodInfo{}
		}
	}
	b.events = 0
	b.newest = 0
	b.covers = b.covers[:0]
	clear(b.coverIx)
}

// Len returns the number of board events held (one per counting board).
func (b *Batch) Len() int { return b.events }

// Empty reports whether the batch has nothing to apply: no board events and
// no covered offsets.
func (b *Batch) Empty() bool { return b.events == 0 && len(b.covers) == 0 }

// Cover records that the batch read the offsets first..last of
// topic/partition, whether or not their records carry board events (or are
// valid at all). Apply marks every board's applied ranges with the whole
// range the batch read from each partition, so that consecutive batches
// leave one contiguous range per partition instead of one range per batch
// with board events. Only offsets the caller really read may be covered: a
// covered offset is never applied afterwards.
func (b *Batch) Cover(topic string, partition int32, first, last int64) {
	k := partKey{topic, partition}
	if n := len(b.covers); n > 0 && b.covers[n-1].key == k { // records come in runs of one partition
		c := &b.covers[n-1]
		c.first, c.last = min(c.first, first), max(c.last, last)
		return
	}
	if i, ok := b.coverIx[k]; ok {
		c := &b.covers[i]
		c.first, c.last = min(c.first, first), max(c.last, last)
		return
	}
	b.coverIx[k] = len(b.covers)
	b.covers = append(b.covers, cover{key: k, first: first, last: last})
}

// seal gives every board a part for each covered topic-partition, and
// widens each part's range to the offsets covered. Apply calls it; calling
// it again changes nothing.
//
// A partition whose events a remove event split into several parts (one
// before it, one from it on) has its offsets shared out: the first part
// starts at the cover's first offset, each part ends just before the next
// one's remove, and the last ends at the cover's last offset.
func (b *Batch) seal() {
	for _, c := range b.covers {
		for bi := range b.boards {
			last := b.part(bi, c.key.topic, c.key.partition)
			var segs []*part
			for _, p := range b.parts[bi] {
				if p.topic == c.key.topic && p.partition == c.key.partition {
					segs = append(segs, p)
				}
			}
			segs[0].first = min(segs[0].first, c.first)
			for k := 0; k+1 < len(segs); k++ {
				segs[k].last = segs[k+1].first - 1
				segs[k].first = min(segs[k].first, segs[k].last)
			}
			last.last = max(last.last, c.last)
		}
	}
}

// Add adds the board events of one record read from topic/partition at
// offset, produced at recordTime (the Kafka record timestamp; the zero time
// skips the late check). Records of one partition must be added in offset
// order. Meeting events are ignored.
//
// An event whose period or slice had already closed at recordTime (grace
// included) is late: it is not added, and Add returns a *RejectError with
// class "late" for the first such event, counting the others in More (the
// caller sends the record to the DLQ); the record's other events are added
// all the same. The decision uses
// the record's timestamp, not the clock, so a replay decides the same. An
// event a first-reached rolling board cannot encode (before its epoch or
// past its horizon) is rejected with class "ts".
func (b *Batch) Add(topic string, partition int32, offset int64, recordTime time.Time, evs []codec.Event) error {
	var first *RejectError
	reject := func(e *RejectError) {
		if first == nil {
			first = e
		} else {
			first.More++
		}
	}
	rt := recordTime.UnixMilli()
	if !recordTime.IsZero() {
		b.newest = max(b.newest, rt)
	}
	// A record's remove events apply before its other events, wherever
	// they stand in it, so that a partition's parts split at record
	// boundaries.
	for i := range evs {
		if ev := &evs[i]; ev.Type == codec.TypeRemove {
			if e := b.addRemove(topic, partition, offset, ev, i); e != nil {
				reject(e)
			}
		}
	}
	for i := range evs {
		ev := &evs[i]
		if !ev.Type.Counted() {
			continue
		}
		if recordTime.IsZero() {
			b.newest = max(b.newest, ev.TS)
		}
		for bi, bd := range b.boards {
			if !bd.Counts(ev.Type) {
				continue
			}
			var bucket, lateAt int64
			if bd.Kind() == boarddef.Periodic {
				pi := b.period(bi, ev.TS)
				bucket, lateAt = pi.key, pi.end+bd.Grace().Milliseconds()
			} else if bd.Kind() == boarddef.Total && !bd.FirstReached() {
				bucket, lateAt = totalBucket(bd, ev.TS), math.MaxInt64
				if bd.HalfLife() > 0 {
					lateAt = bd.DecayLateAt(bucket)
				}
			} else {
				if bd.FirstReached() && (ev.TS < bd.Epoch().UnixMilli() || ev.TS >= bd.Horizon().UnixMilli()) {
					reject(&RejectError{Board: bd.Name(), Event: i, Class: "ts",
						Msg: fmt.Sprintf("ts %d is outside the board's first-reached range %s … %s", ev.TS,
							bd.Epoch().Format(time.RFC3339), bd.Horizon().UTC().Format(time.RFC3339))})
					continue
				}
				if bd.Kind() == boarddef.Total {
					bucket, lateAt = totalBucket(bd, ev.TS), math.MaxInt64
				} else {
					bucket = bd.SliceOf(ev.TS)
					lateAt = bd.LateAt(ev.TS).UnixMilli()
				}
			}
			if !recordTime.IsZero() && rt >= lateAt {
				reject(&RejectError{Board: bd.Name(), Event: i, Class: "late",
					Msg: fmt.Sprintf("late: event time %s, record time %s, accepted until %s",
						time.UnixMilli(ev.TS).UTC().Format(time.RFC3339Nano), recordTime.UTC().Format(time.RFC3339Nano),
						time.UnixMilli(lateAt).UTC().Format(time.RFC3339Nano))})
				continue
			}
			v, err := bd.Units(ev)
			if err != nil {
				reject(&RejectError{Board: bd.Name(), Event: i, Class: "value", Msg: err.Error()})
				continue
			}
			if bd.HalfLife() > 0 {
				v *= bd.DecayWeight(ev.TS) // below 2^50: |v| ≤ 2^29 − 1, the weight ≤ 2^21
			}
			p := b.part(bi, topic, partition)
			p.first, p.last = min(p.first, offset), max(p.last, offset)
			p.entries = append(p.entries, entry{offset: offset, bucket: bucket, member: bd.MemberOf(ev),
				value: v, ts: ev.TS, id: ev.ID, event: i})
			b.events++
		}
	}
	if first != nil {
		return first
	}
	return nil
}

// addRemove adds remove event ev of a record at offset: a part of its
// own (shared by the record's removals) for the board it names (so that the events of the partition before
// it and after it are folded apart, and the removal lands between them),
// which the partition's later events of that board join. An unknown board
// is a rejection of class "board".
func (b *Batch) addRemove(topic string, partition int32, offset int64, ev *codec.Event, i int) *RejectError {
	bi := -1
	for k, bd := range b.boards {
		if bd.Name() == ev.Board {
			bi = k
		}
	}
	if bi < 0 {
		return &RejectError{Board: ev.Board, Event: i, Class: "board", Msg: fmt.Sprintf("board: no board named %q is configured", ev.Board)}
	}
	bd := b.boards[bi]
	rm := &removal{settled: ev.Settled}
	if bd.Kind() == boarddef.Periodic {
		p := bd.Period(time.UnixMilli(ev.TS))
		for range bd.Retention() + 1 {
			rm.labels = append(rm.labels, p.Label)
			p = bd.Period(p.Start.Add(-time.Millisecond))
		}
	}
	k := partKey{topic, partition}
	if i, ok := b.index[bi][k]; !ok || b.parts[bi][i].first != offset {
		delete(b.index[bi], k) // else the record's removals share its part
	}
	p := b.part(bi, topic, partition)
	p.first, p.last = offset, offset
	p.entries = append(p.entries, entry{offset: offset, bucket: noBucket, member: bd.MemberOf(ev), ts: ev.TS, event: i, rm: rm})
	b.events++
	return nil
}

func (b *Batch) part(bi int, topic string, partition int32) *part {
	k := partKey{topic, partition}
	if i, ok := b.index[bi][k]; ok {
		return b.parts[bi][i]
	}
	var p *part
	if n := len(b.free); n > 0 {
		p, b.free = b.free[n-1], b.free[:n-1]
	} else {
		p = &part{}
	}
	p.topic, p.partition = topic, partition
	p.first, p.last = math.MaxInt64, -1
	b.index[bi][k] = len(b.parts[bi])
	b.parts[bi] = append(b.parts[bi], p)
	return p
}

// period returns the period of periodic board bi holding ms, cached.
func (b *Batch) period(bi int, ms int64) periodInfo {
	if l := b.last[bi]; l.ok && ms >= l.start && ms < l.end {
		return l
	}
	bd := b.boards[bi]
	p := bd.Period(time.UnixMilli(ms))
	pi := periodInfo{key: p.Key(), label: p.Label, start: p.Start.UnixMilli(), end: p.End.UnixMilli(),
		expireAt: bd.KeptUntil(p).UnixMilli(), ok: true}
	b.last[bi] = pi
	b.periods[bi][pi.key] = pi
	return pi
}
