package board

import (
	"fmt"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// Batch collects the board events of one poll batch, per board and
// topic-partition, for Store.Apply. It is reused from batch to batch (Reset)
// and is not safe for concurrent use.
type Batch struct {
	boards  []*Board
	parts   [][]*part // per board: its topic-partition parts, in order of first appearance
	index   []map[partKey]int
	periods []map[int64]periodInfo // per periodic board: the periods of this batch by key
	last    []periodInfo           // per board: the period looked up last (a batch mostly hits one)
	events  int
	free    []*part
}

type partKey struct {
	topic     string
	partition int32
}

// part is one topic-partition's share of a board's events in a batch, kept
// unfolded (one entry per counted event) so that a part overlapping the
// watermark can be re-sent from any offset.
type part struct {
	topic     string
	partition int32
	entries   []entry
}

// entry is one counted event.
type entry struct {
	offset int64
	bucket int64 // period key or slice index
	member string
	value  int64
	ts     int64
	id     string
	event  int // index in its record
}

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
func NewBatch(boards []*Board) *Batch {
	b := &Batch{boards: boards, parts: make([][]*part, len(boards)), index: make([]map[partKey]int, len(boards)),
		periods: make([]map[int64]periodInfo, len(boards)), last: make([]periodInfo, len(boards))}
	for i := range b.index {
		b.index[i] = map[partKey]int{}
		b.periods[i] = map[int64]periodInfo{}
	}
	return b
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
}

// Len returns the number of board events held (one per counting board).
func (b *Batch) Len() int { return b.events }

// Add adds the board events of one record read from topic/partition at
// offset, produced at recordTime (the Kafka record timestamp; the zero time
// skips the late check). Records of one partition must be added in offset
// order. Meeting events are ignored.
//
// An event whose period or slice had already closed at recordTime (grace
// included) is late: it is not added, and Add returns a *RejectError with
// class "late" for the first such event (the caller sends the record to the
// DLQ); the record's other events are added all the same. The decision uses
// the record's timestamp, not the clock, so a replay decides the same. An
// event a first-reached rolling board cannot encode (before its epoch or
// past its horizon) is rejected with class "ts".
func (b *Batch) Add(topic string, partition int32, offset int64, recordTime time.Time, evs []codec.Event) error {
	var first *RejectError
	reject := func(e *RejectError) {
		if first == nil {
			first = e
		}
	}
	rt := recordTime.UnixMilli()
	for i := range evs {
		ev := &evs[i]
		if !ev.Type.Board() {
			continue
		}
		for bi, bd := range b.boards {
			if !bd.Counts(ev.Type) {
				continue
			}
			var bucket, lateAt int64
			if bd.kind == Periodic {
				pi := b.period(bi, ev.TS)
				bucket, lateAt = pi.key, pi.end+bd.grace.Milliseconds()
			} else {
				if bd.firstReached && (ev.TS < bd.epoch.UnixMilli() || ev.TS >= bd.Horizon().UnixMilli()) {
					reject(&RejectError{Board: bd.name, Event: i, Class: "ts",
						Msg: fmt.Sprintf("ts %d is outside the board's first-reached range %s … %s", ev.TS,
							bd.epoch.Format(time.RFC3339), bd.Horizon().UTC().Format(time.RFC3339))})
					continue
				}
				bucket = bd.SliceOf(ev.TS)
				lateAt = bd.LateAt(ev.TS).UnixMilli()
			}
			if !recordTime.IsZero() && rt >= lateAt {
				reject(&RejectError{Board: bd.name, Event: i, Class: "late",
					Msg: fmt.Sprintf("late: event time %s, record time %s, accepted until %s",
						time.UnixMilli(ev.TS).UTC().Format(time.RFC3339Nano), recordTime.UTC().Format(time.RFC3339Nano),
						time.UnixMilli(lateAt).UTC().Format(time.RFC3339Nano))})
				continue
			}
			p := b.part(bi, topic, partition)
			p.entries = append(p.entries, entry{offset: offset, bucket: bucket, member: bd.MemberOf(ev),
				value: bd.ValueOf(ev), ts: ev.TS, id: ev.ID, event: i})
			b.events++
		}
	}
	if first != nil {
		return first
	}
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
	pi := periodInfo{key: p.key, label: p.Label, start: p.Start.UnixMilli(), end: p.End.UnixMilli(),
		expireAt: bd.expireAt(p).UnixMilli(), ok: true}
	b.last[bi] = pi
	b.periods[bi][pi.key] = pi
	return pi
}
