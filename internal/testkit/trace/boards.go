package trace

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

// BoardConfig says what leaderboard records GenerateBoards makes
// (docs/DESIGN.md §8). Zero counts take their defaults; zero rates mean none of that kind.
type BoardConfig struct {
	// Seed selects the records; the same BoardConfig gives the same records.
	Seed uint64
	// Records is the number of records. Default: 1000.
	Records int
	// Now is the newest event time, Unix ms; required. Board events are
	// placed by event time in periods and slices, and found late by the
	// Kafka record time, so a test sets Now to about when it produces.
	Now int64
	// Span is how far back fresh event times reach: they fall in
	// (Now − Span, Now], in ms. Default: 2 hours.
	Span int64
	// Rooms, Users and Items are how many gift rooms ("r-n", the meeting
	// trace's room names), users ("u-n") and traded items ("item-n") the
	// events name. Defaults: 40, 50, 10.
	Rooms, Users, Items int
	// RoomPrefix begins every room and item id, as Config.RoomPrefix.
	RoomPrefix string
	// ArrayRate is the share of records that are arrays of 2–4 events. 0..1.
	ArrayRate float64
	// IDRate is the share of fresh events that carry an event id. 0..1.
	IDRate float64
	// RetryRate is the share of records that re-send, verbatim, a recent
	// record whose events all carry ids: a producer's retry, which each
	// board must count once. 0..1.
	RetryRate float64
	// LateRate is the share of fresh events whose time is 8 to 9 days
	// before Now: late on every board of docs/DESIGN.md §8's examples that counts
	// them (their week, day or slice closed days ago). 0..1.
	LateRate float64
	// DecimalRate is the share of score events whose value is in tenths
	// (2.5, never a whole number), for a score board of scale 10. 0..1.
	DecimalRate float64

	// Removals (docs/DESIGN.md §8 "Corrections"). Cheaters is how many
	// members the trace takes off boards: cheater i is user "cheat-u-i",
	// sending gifts and scores in room RoomPrefix + "cheat-r-i", each in a
	// record of its own on one topic keyed by that room, so that all of a
	// cheater's events and removals stay in one partition: a removal's
	// place among them is then the same whatever order partitions are
	// applied in (which the model cannot know). Default 0: no removals.
	Cheaters int
	// CheatRate is the share of records that carry a cheater's event, and
	// RemoveRate the share that remove a cheater from one of RemoveBoards
	// (the member is the user on a user board, the room on a room board).
	// 0..1.
	CheatRate, RemoveRate float64
	// RemoveBoards names the boards remove events may name.
	RemoveBoards []string
}

// LateAge is how much older than BoardConfig.Now a late event is, at least.
const LateAge = 8 * 24 * 3600 * 1000

// GenerateBoards returns cfg.Records records of board events: gifts to
// rooms, scores and the three actions (received, read, passed) of users, and
// trades of items (the item id in room_id), spread over the three callback
// topics. Every record is good (Record.Bad is empty); a retry is marked
// Dup. Like Generate it is a pure function of cfg; it panics when cfg.Now is
// not set.
func GenerateBoards(cfg BoardConfig) []Record {
	if cfg.Now <= 0 {
		panic("trace: BoardConfig.Now must be set")
	}
	if cfg.Records == 0 {
		cfg.Records = 1000
	}
	if cfg.Span == 0 {
		cfg.Span = 2 * 3600 * 1000
	}
	if cfg.Rooms == 0 {
		cfg.Rooms = 40
	}
	if cfg.Users == 0 {
		cfg.Users = 50
	}
	if cfg.Items == 0 {
		cfg.Items = 10
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x626f61726473)) // "boards"
	var retriable []Record                                 // recent records whose events all carry ids
	out := make([]Record, 0, cfg.Records)
	nextID := 0
	for range cfg.Records {
		if cfg.Cheaters > 0 {
			if x := rng.Float64(); x < cfg.CheatRate+cfg.RemoveRate {
				out = append(out, cheat(rng, cfg, x < cfg.RemoveRate))
				continue
			}
		}
		if len(retriable) > 0 && rng.Float64() < cfg.RetryRate {
			r := retriable[rng.IntN(len(retriable))]
			out = append(out, Record{Topic: r.Topic, Key: r.Key, Value: append([]byte(nil), r.Value...),
				Events: append([]codec.Event(nil), r.Events...), Dup: true})
			continue
		}
		n := 1
		if rng.Float64() < cfg.ArrayRate {
			n = 2 + rng.IntN(3)
		}
		topic := topics[rng.IntN(len(topics))]
		evs := make([]codec.Event, n)
		allIDs := true
		for i := range evs {
			e := codec.Event{
				RoomID: cfg.RoomPrefix + "r-" + strconv.Itoa(rng.IntN(cfg.Rooms)),
				UserID: "u-" + strconv.Itoa(rng.IntN(cfg.Users)),
				TS:     cfg.Now - rng.Int64N(cfg.Span),
				Source: topicSource(topic),
			}
			switch w := rng.IntN(10); {
			case w < 3:
				e.Type, e.Value = codec.TypeGift, 1+rng.Int64N(100)
			case w < 5:
				e.Type, e.Value = codec.TypeScore, 1+rng.Int64N(5)
				if rng.Float64() < cfg.DecimalRate {
					e.Value, e.Decimals = 10*rng.Int64N(5)+1+rng.Int64N(9), 1 // 0.1 … 4.9, never whole
				}
			case w < 8:
				e.Type = []codec.Type{codec.TypeReceived, codec.TypeRead, codec.TypePassed}[rng.IntN(3)]
			default:
				e.Type, e.Value = codec.TypeTrade, 1+rng.Int64N(1000)
				e.RoomID = cfg.RoomPrefix + "item-" + strconv.Itoa(rng.IntN(cfg.Items))
			}
			if rng.Float64() < cfg.LateRate {
				e.TS = cfg.Now - LateAge - rng.Int64N(24*3600*1000)
			}
			if rng.Float64() < cfg.IDRate {
				e.ID = fmt.Sprintf("ev-%d-%d", cfg.Seed, nextID)
				nextID++
			} else {
				allIDs = false
			}
			evs[i] = e
		}
		objs := make([][]byte, n)
		for i, e := range evs {
			objs[i] = object(boardFields(e))
		}
		value := objs[0]
		if n > 1 {
			value = array(objs)
		}
		rec := Record{Topic: topic, Key: evs[0].RoomID, Value: value, Events: evs}
		out = append(out, rec)
		if allIDs {
			retriable = append(retriable, rec)
			if len(retriable) > recentRecords {
				retriable = retriable[1:]
			}
		}
	}
	return out
}

// cheat returns a record of a cheater: a gift or a score, or (remove) the
// removal of the cheater from one of cfg.RemoveBoards.
func cheat(rng *rand.Rand, cfg BoardConfig, remove bool) Record {
	i := rng.IntN(cfg.Cheaters)
	topic := topics[i%len(topics)]
	e := codec.Event{RoomID: cfg.RoomPrefix + "cheat-r-" + strconv.Itoa(i), UserID: "cheat-u-" + strconv.Itoa(i),
		TS: cfg.Now - rng.Int64N(cfg.Span), Source: topicSource(topic)}
	switch {
	case remove && len(cfg.RemoveBoards) > 0:
		e.Type, e.Board = codec.TypeRemove, cfg.RemoveBoards[rng.IntN(len(cfg.RemoveBoards))]
	case rng.IntN(2) == 0:
		e.Type, e.Value = codec.TypeGift, 50+rng.Int64N(100)
	default:
		e.Type, e.Value = codec.TypeScore, 3+rng.Int64N(3)
	}
	return Record{Topic: topic, Key: e.RoomID, Value: object(boardFields(e)), Events: []codec.Event{e}}
}

// boardFields returns the JSON fields of board event e: the value only for
// the types that take one (as a decimal with its places), the board of a
// remove, the id when it has one.
func boardFields(e codec.Event) []field {
	fs := []field{
		{"room_id", quote(e.RoomID)},
		{"user_id", quote(e.UserID)},
		{"type", quote(e.Type.String())},
	}
	switch e.Type {
	case codec.TypeGift, codec.TypeScore, codec.TypeTrade:
		v := strconv.FormatInt(e.Value, 10)
		if e.Decimals > 0 {
			for len(v) <= int(e.Decimals) {
				v = "0" + v
			}
			v = v[:len(v)-int(e.Decimals)] + "." + v[len(v)-int(e.Decimals):]
		}
		fs = append(fs, field{"value", v})
	case codec.TypeRemove:
		fs = append(fs, field{"board", quote(e.Board)})
	}
	fs = append(fs, field{"ts", strconv.FormatInt(e.TS, 10)})
	if e.ID != "" {
		fs = append(fs, field{"id", quote(e.ID)})
	}
	return fs
}

// Interleave merges a and b into one sequence that keeps the order of each,
// drawing from either in proportion to what is left: a pure function of
// seed.
func Interleave(seed uint64, a, b []Record) []Record {
	rng := rand.New(rand.NewPCG(seed, 0x6d6978)) // "mix"
	out := make([]Record, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if rng.IntN(len(a)+len(b)) < len(a) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}
