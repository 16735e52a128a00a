package bench

import (
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

// WorkloadInfo describes a named workload.
type WorkloadInfo struct {
	Name    string
	Rooms   int    // default rooms (churn: rooms open at once)
	Members int    // default members per room
	Doc     string // what the records are
}

// workloads are the named workloads; generate fills a builder until it has
// the configured number of events.
var workloads = map[string]struct {
	info     WorkloadInfo
	generate func(*builder)
}{
	"meeting": {WorkloadInfo{"meeting", 10_000, 100,
		"many mid-size meetings: a record picks a room uniformly; 80% of records are volume indications " +
			"(85% of them JSON arrays of 2-5 distinct speakers of the room, the rest single objects) " +
			"on the rtc topic, speakers skewed towards a few talkers (member index = members*u^3); " +
			"the rest are single audio (7%) and video (5%) events on client, join (3%), leave (2%) " +
			"and role (3%) events on signal, members uniform"}, genMeeting},
	"town-hall": {WorkloadInfo{"town-hall", 10, 10_000,
		"a few huge rooms with few loud speakers: 60% of records are volume indications of 1-3 of " +
			"the room's 5 speakers (arrays when more than one); the audience sends join (15%), " +
			"video (10%), audio (7%), leave (5%) and role (3%) events, members uniform"}, genTownHall},
	"webinar": {WorkloadInfo{"webinar", 1, 50_000,
		"one huge room, a panel and a quiet audience: 50% of records are volume indications of 1-3 of " +
			"the 4 panelists (a host and three speakers; arrays when more than one); the audience sends " +
			"join (20%), leave (5%), video (8%), audio (8%), role (2%) events and, for questions, single " +
			"quiet volume indications (7%), members uniform"}, genWebinar},
	"churn": {WorkloadInfo{"churn", 1_000, 10,
		"many short rooms: --rooms rooms are open at once; each fresh room sees every member join, " +
			"then 2 records per member (70% volume arrays of 1-3 speakers, else audio or video), then " +
			"every member leave, and is replaced by a room with a new id"}, genChurn},
}

// Workloads lists the named workloads with their defaults.
func Workloads() []WorkloadInfo {
	out := make([]WorkloadInfo, 0, len(workloads))
	for _, n := range WorkloadNames() {
		out = append(out, workloads[n].info)
	}
	return out
}

// WorkloadNames lists the workload names.
func WorkloadNames() []string { return []string{"meeting", "town-hall", "webinar", "churn"} }

// Workload is a generated load: records ready to produce and the events
// they hold. The ts fields of the record values are placeholders until
// stamp sets them (to the time the record is produced).
type Workload struct {
	Name    string
	Seed    uint64
	Rooms   int      // rooms (churn: rooms open at once)
	Members int      // members per room
	RoomIDs []string // every room id the records name, by index
	Records []Record
	Events  []Event // every event, in record order
	keys    [][]byte
}

// Record is one Kafka record of a workload.
type Record struct {
	Source codec.Source // the topic: {env}.callbacks.{source}
	Room   int32        // index into Workload.RoomIDs; the record key
	Value  []byte
	first  int32 // first event, index into Workload.Events
	n      int32 // events in the record
}

// Event is one event of a record.
type Event struct {
	Room   int32 // index into Workload.RoomIDs
	Member int32 // user id "u-<Member>"
	Type   codec.Type
	Value  int16 // audio, video: 0/1; volume: 0..999; role: a codec.Role
	tsAt   int32 // offset of the 13-digit ts in the record's value
}

// tsDigits is the width of a Unix-millisecond time from 2001 to 2286.
const tsDigits = 13

// Generate builds the workload of cfg (defaults applied).
func Generate(cfg Config) (*Workload, error) {
	cfg = cfg.withDefaults()
	spec, ok := workloads[cfg.Workload]
	if !ok {
		return nil, fmt.Errorf("bench: unknown workload %q", cfg.Workload)
	}
	w := &Workload{Name: cfg.Workload, Seed: cfg.Seed, Rooms: spec.info.Rooms, Members: spec.info.Members}
	if cfg.Rooms > 0 {
		w.Rooms = cfg.Rooms
	}
	if cfg.Members > 0 {
		w.Members = cfg.Members
	}
	b := &builder{w: w, rng: rand.New(rand.NewPCG(cfg.Seed, 0x726f737472756d)), left: cfg.Events}
	w.Records = make([]Record, 0, cfg.Events/2)
	w.Events = make([]Event, 0, cfg.Events)
	spec.generate(b)
	w.keys = make([][]byte, len(w.RoomIDs))
	for i, id := range w.RoomIDs {
		w.keys[i] = []byte(id)
	}
	return w, nil
}

// key returns the record key of room.
func (w *Workload) key(room int32) []byte { return w.keys[room] }

// userID returns the user id of member.
func userID(member int32) string { return "u-" + strconv.Itoa(int(member)) }

// stamp writes ms, a 13-digit Unix-millisecond time, into every ts field
// of r. The record must not be in a producer's hands meanwhile.
func (w *Workload) stamp(r *Record, ms int64) {
	var d [20]byte
	s := strconv.AppendInt(d[:0], ms, 10)
	for _, ev := range w.Events[r.first : r.first+r.n] {
		copy(r.Value[ev.tsAt:ev.tsAt+tsDigits], s)
	}
}

// builder appends records to a workload until left events are generated.
type builder struct {
	w     *Workload
	rng   *rand.Rand
	left  int
	chunk []byte  // value arena; a fresh chunk when full, so values never move
	evs   []Event // the record being built
}

// add appends a record of b.evs, as a JSON array when array is set (a
// single event otherwise), and clears b.evs.
func (b *builder) add(src codec.Source, array bool) {
	room := b.evs[0].Room
	id := b.w.RoomIDs[room]
	need := len(b.evs) * (160 + len(id))
	if cap(b.chunk)-len(b.chunk) < need {
		b.chunk = make([]byte, 0, max(4<<20, need))
	}
	start := len(b.chunk)
	v := b.chunk
	if array {
		v = append(v, '[')
	}
	first := int32(len(b.w.Events))
	for i := range b.evs {
		ev := &b.evs[i]
		if i > 0 {
			v = append(v, ',')
		}
		v = append(v, `{"room_id":"`...)
		v = append(v, id...)
		v = append(v, `","user_id":"u-`...)
		v = strconv.AppendInt(v, int64(ev.Member), 10)
		v = append(v, `","type":"`...)
		v = append(v, ev.Type.String()...)
		v = append(v, '"')
		switch ev.Type {
		case codec.TypeJoin, codec.TypeLeave:
		case codec.TypeRole:
			v = append(v, `,"value":"`...)
			v = append(v, codec.Role(ev.Value).String()...)
			v = append(v, '"')
		default:
			v = append(v, `,"value":`...)
			v = strconv.AppendInt(v, int64(ev.Value), 10)
		}
		v = append(v, `,"ts":`...)
		ev.tsAt = int32(len(v) - start)
		v = append(v, "1000000000000"...) // placeholder, see stamp
		v = append(v, '}')
		b.w.Events = append(b.w.Events, *ev)
	}
	if array {
		v = append(v, ']')
	}
	b.chunk = v
	b.w.Records = append(b.w.Records, Record{Source: src, Room: room, Value: v[start:len(v):len(v)], first: first, n: int32(len(b.evs))})
	b.left -= len(b.evs)
	b.evs = b.evs[:0]
}

// one adds a single-event record.
func (b *builder) one(src codec.Source, room, member int32, t codec.Type, value int16) {
	b.evs = append(b.evs, Event{Room: room, Member: member, Type: t, Value: value})
	b.add(src, false)
}

// speakers adds a volume record of n distinct members drawn by pick (one
// object when n is 1, else an array), capped by the events left.
func (b *builder) speakers(room int32, n int, pick func() int32, volume func() int16) {
	n = min(n, b.left)
	for tries := 0; len(b.evs) < n && tries < 4*n; tries++ {
		m := pick()
		dup := false
		for _, e := range b.evs {
			dup = dup || e.Member == m
		}
		if !dup {
			b.evs = append(b.evs, Event{Room: room, Member: m, Type: codec.TypeVolume, Value: volume()})
		}
	}
	b.add(codec.SourceRTC, len(b.evs) > 1)
}

// role draws a role: mostly ranked ones, 5% excluded from the ranking.
func (b *builder) role() int16 {
	x := b.rng.IntN(100)
	switch {
	case x < 40:
		return int16(codec.RoleStudent)
	case x < 70:
		return int16(codec.RoleGuest)
	case x < 88:
		return int16(codec.RoleCohost)
	case x < 95:
		return int16(codec.RoleHost)
	default:
		return int16(codec.RoleBroadcastControl) + int16(b.rng.IntN(3))
	}
}

func (b *builder) bit() int16 { return int16(b.rng.IntN(2)) }

func roomIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = prefix + strconv.Itoa(i)
	}
	return ids
}

func genMeeting(b *builder) {
	w, rng := b.w, b.rng
	w.RoomIDs = roomIDs("r-", w.Rooms)
	m := float64(w.Members)
	talker := func() int32 { u := rng.Float64(); return int32(m * u * u * u) }
	member := func() int32 { return int32(rng.IntN(w.Members)) }
	volume := func() int16 { return int16(100 + rng.IntN(900)) }
	for b.left > 0 {
		room := int32(rng.IntN(w.Rooms))
		switch x := rng.IntN(100); {
		case x < 80:
			n := 1
			if rng.IntN(100) < 85 {
				n = 2 + rng.IntN(4)
			}
			b.speakers(room, min(n, w.Members), talker, volume)
		case x < 87:
			b.one(codec.SourceClient, room, member(), codec.TypeAudio, b.bit())
		case x < 92:
			b.one(codec.SourceClient, room, member(), codec.TypeVideo, b.bit())
		case x < 95:
			b.one(codec.SourceSignal, room, member(), codec.TypeJoin, 0)
		case x < 97:
			b.one(codec.SourceSignal, room, member(), codec.TypeLeave, 0)
		default:
			b.one(codec.SourceSignal, room, member(), codec.TypeRole, b.role())
		}
	}
}

func genTownHall(b *builder) {
	w, rng := b.w, b.rng
	w.RoomIDs = roomIDs("th-", w.Rooms)
	speakers := min(5, w.Members)
	speaker := func() int32 { return int32(rng.IntN(speakers)) }
	member := func() int32 { return int32(rng.IntN(w.Members)) }
	volume := func() int16 { return int16(500 + rng.IntN(500)) }
	for b.left > 0 {
		room := int32(rng.IntN(w.Rooms))
		switch x := rng.IntN(100); {
		case x < 60:
			b.speakers(room, min(1+rng.IntN(3), speakers), speaker, volume)
		case x < 75:
			b.one(codec.SourceSignal, room, member(), codec.TypeJoin, 0)
		case x < 85:
			b.one(codec.SourceClient, room, member(), codec.TypeVideo, b.bit())
		case x < 92:
			b.one(codec.SourceClient, room, member(), codec.TypeAudio, b.bit())
		case x < 97:
			b.one(codec.SourceSignal, room, member(), codec.TypeLeave, 0)
		default:
			b.one(codec.SourceSignal, room, member(), codec.TypeRole, b.role())
		}
	}
}

// genWebinar is one room (or --rooms of them) where members 0-3 are the
// panel and everyone else listens: the panel's voices fill the top, and
// the audience's joins, toggles and occasional questions touch members
// spread over all 50,000, most of whom never reach the top.
func genWebinar(b *builder) {
	w, rng := b.w, b.rng
	w.RoomIDs = roomIDs("wb-", w.Rooms)
	panel := min(4, w.Members)
	panelist := func() int32 { return int32(rng.IntN(panel)) }
	member := func() int32 { return int32(rng.IntN(w.Members)) }
	loud := func() int16 { return int16(400 + rng.IntN(600)) }
	quiet := func() int16 { return int16(50 + rng.IntN(250)) }
	for b.left > 0 {
		room := int32(rng.IntN(w.Rooms))
		switch x := rng.IntN(100); {
		case x < 50:
			b.speakers(room, min(1+rng.IntN(3), panel), panelist, loud)
		case x < 57:
			b.speakers(room, 1, member, quiet)
		case x < 77:
			b.one(codec.SourceSignal, room, member(), codec.TypeJoin, 0)
		case x < 82:
			b.one(codec.SourceSignal, room, member(), codec.TypeLeave, 0)
		case x < 90:
			b.one(codec.SourceClient, room, member(), codec.TypeVideo, b.bit())
		case x < 98:
			b.one(codec.SourceClient, room, member(), codec.TypeAudio, b.bit())
		default:
			b.one(codec.SourceSignal, room, member(), codec.TypeRole, b.role())
		}
	}
}

func genChurn(b *builder) {
	w, rng := b.w, b.rng
	const (
		joining = iota
		active
		leaving
	)
	type slot struct {
		room  int32
		phase int
		i     int // next member to join or leave; active records left
	}
	open := func() slot {
		w.RoomIDs = append(w.RoomIDs, "c-"+strconv.Itoa(len(w.RoomIDs)))
		return slot{room: int32(len(w.RoomIDs) - 1)}
	}
	slots := make([]slot, w.Rooms)
	for i := range slots {
		slots[i] = open()
	}
	member := func() int32 { return int32(rng.IntN(w.Members)) }
	volume := func() int16 { return int16(100 + rng.IntN(900)) }
	for b.left > 0 {
		s := &slots[rng.IntN(len(slots))]
		switch s.phase {
		case joining:
			b.one(codec.SourceSignal, s.room, int32(s.i), codec.TypeJoin, 0)
			if s.i++; s.i == w.Members {
				s.phase, s.i = active, 2*w.Members
			}
		case active:
			switch x := rng.IntN(100); {
			case x < 70:
				b.speakers(s.room, min(1+rng.IntN(3), w.Members), member, volume)
			case x < 85:
				b.one(codec.SourceClient, s.room, member(), codec.TypeAudio, b.bit())
			default:
				b.one(codec.SourceClient, s.room, member(), codec.TypeVideo, b.bit())
			}
			if s.i--; s.i == 0 {
				s.phase = leaving
			}
		case leaving:
			b.one(codec.SourceSignal, s.room, int32(s.i), codec.TypeLeave, 0)
			if s.i++; s.i == w.Members {
				*s = open()
			}
		}
	}
}

// summary describes the generated workload for the report.
func (w *Workload) summary() WorkloadSummary {
	s := WorkloadSummary{Name: w.Name, Seed: w.Seed, Rooms: w.Rooms, Members: w.Members,
		RoomIDs: len(w.RoomIDs), Records: len(w.Records), Events: len(w.Events)}
	var volume, bytes int
	for _, e := range w.Events {
		if e.Type == codec.TypeVolume {
			volume++
		}
	}
	for _, r := range w.Records {
		bytes += len(r.Value)
	}
	if len(w.Events) > 0 {
		s.VolumeShare = float64(volume) / float64(len(w.Events))
		s.EventsPerRecord = float64(len(w.Events)) / float64(len(w.Records))
		s.BytesPerRecord = float64(bytes) / float64(len(w.Records))
	}
	return s
}
