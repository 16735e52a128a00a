package trace

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

const (
	// Sizes of the generator's memory of recent output.
	recentRecords = 256 // good records a duplicate may re-send
	recentEvents  = 64  // events a same-millisecond contradiction may answer

	// maxLateness is how far a reordered record's events may be behind the
	// newest event before it, in ms.
	maxLateness = 5000
)

// Generate returns cfg.Records records (defaults filled in). It panics when
// cfg.Validate reports an error: a trace configuration is part of a test.
func Generate(cfg Config) []Record {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.WithDefaults()
	g := &generator{
		cfg: cfg,
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x726f737472756d)), // "rostrum"
		now: cfg.BaseTS,
	}
	g.makeRooms()
	out := make([]Record, 0, cfg.Records)
	for range cfg.Records {
		u := g.rng.Float64()
		switch {
		case u < cfg.BadRate:
			out = append(out, g.bad())
		case u < cfg.BadRate+cfg.DupRate && len(g.recent) > 0:
			out = append(out, g.dup())
		case u < cfg.BadRate+cfg.DupRate+cfg.ReorderRate:
			out = append(out, g.fresh(true))
		case u < cfg.BadRate+cfg.DupRate+cfg.ReorderRate+cfg.UnknownRate:
			out = append(out, g.unknown())
		default:
			out = append(out, g.fresh(false))
		}
		g.now += 1 + g.rng.Int64N(maxStep)
	}
	return out
}

// generator is the state of one Generate call.
type generator struct {
	cfg     Config
	rng     *rand.Rand
	now     int64 // the trace clock, Unix ms
	newest  int64 // the newest event time of the records so far, Unix ms
	rooms   []*room
	weights []int // cumulative room weights for pickRoom

	recent []sent        // the last good fresh records, for duplicates
	events []codec.Event // the last fresh events, for contradictions
}

// sent is a good fresh record and whether its JSON names the source.
type sent struct {
	rec        Record
	withSource bool
}

type room struct {
	id       string
	members  []*member
	target   int       // how many members the meeting tends to have present
	speakers int       // how many present members it tends to have unmuted
	host     *member   // the current host, or nil
	sharer   *member   // the member sharing their screen, or nil
	spot     *member   // the member the host put in the spotlight, or nil
	demote   []*member // former hosts still waiting for their new role
	present  int
}

type member struct {
	id           string
	present      bool
	role         codec.Role
	audio, video bool
	share, spot  bool
}

func (g *generator) makeRooms() {
	total := 0
	for i := range g.cfg.Rooms {
		size := g.cfg.MaxMembers
		if i != 0 && g.rng.IntN(8) != 0 {
			size = 1 + g.rng.IntN(min(g.cfg.MaxMembers, 24))
		}
		r := &room{id: g.cfg.RoomPrefix + "r-" + strconv.Itoa(i)}
		for n := range size {
			r.members = append(r.members, &member{id: userID(n), role: codec.RoleStudent})
		}
		r.target = max(1, size*(60+g.rng.IntN(36))/100)
		r.speakers = 1 + size/25
		g.rooms = append(g.rooms, r)
		total += 4 + size
		g.weights = append(g.weights, total)
	}
}

// userID returns the id of a room's n-th member: mostly "u-n", with a few
// other shapes that use the rest of the id alphabet.
func userID(n int) string {
	s := strconv.Itoa(n)
	switch {
	case n%7 == 3:
		return "u-" + s + "@web"
	case n%11 == 5:
		return "guest." + s + ":ios"
	case n%13 == 8:
		return "U_" + s
	}
	return "u-" + s
}

// pickRoom returns a room, bigger rooms more often.
func (g *generator) pickRoom() *room {
	w := g.rng.IntN(g.weights[len(g.weights)-1])
	i, _ := slices.BinarySearch(g.weights, w+1)
	return g.rooms[i]
}

// pick returns a random member of r for which ok holds, or nil.
func (g *generator) pick(r *room, ok func(*member) bool) *member {
	var c []*member
	for _, m := range r.members {
		if ok(m) {
			c = append(c, m)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[g.rng.IntN(len(c))]
}

// pickN returns up to n distinct random members of r for which ok holds,
// in random order.
func (g *generator) pickN(r *room, n int, ok func(*member) bool) []*member {
	var c []*member
	for _, m := range r.members {
		if ok(m) {
			c = append(c, m)
		}
	}
	g.rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
	return c[:min(n, len(c))]
}

func isPresent(m *member) bool { return m.present }
func isAbsent(m *member) bool  { return !m.present }
func anyone(*member) bool      { return true }

// somePresent returns a present member of r, or when none is present any
// member, whose next event is then an implicit join.
func (g *generator) somePresent(r *room) *member {
	if m := g.pick(r, isPresent); m != nil {
		return m
	}
	return g.pick(r, anyone)
}

// setPresent records a presence change of m in the simulation.
func (r *room) setPresent(m *member, present bool) {
	if m.present != present {
		m.present = present
		if present {
			r.present++
		} else {
			r.present--
		}
	}
}

// oneOf returns one of the given topics.
func (g *generator) oneOf(ts ...string) string { return ts[g.rng.IntN(len(ts))] }

// fresh returns a new good record from the simulation. A reordered record's
// events are up to 5 s older than the newest event so far.
func (g *generator) fresh(reordered bool) Record {
	ts := g.now
	if reordered {
		late := 1 + g.rng.Int64N(300)
		if g.rng.IntN(2) == 0 {
			late = 300 + g.rng.Int64N(maxLateness-300+1)
		}
		ts = max(g.cfg.BaseTS, g.newest-late)
	}
	asArray := g.rng.Float64() < g.cfg.ArrayRate
	var topic string
	var events []codec.Event
	switch {
	case asArray:
		topic, events = g.arrayAction(g.pickRoom(), ts)
	case !reordered && len(g.events) > 0 && g.rng.IntN(40) == 0:
		topic, events = g.contradict()
	default:
		topic, events = g.singleAction(g.pickRoom(), ts)
	}

	source := topicSource(topic)
	withSource := g.rng.IntN(10) == 0
	for i := range events {
		events[i].Source = source
	}
	rec := Record{
		Topic:     topic,
		Key:       events[0].RoomID,
		Value:     encode(events, asArray, withSource),
		Events:    events,
		Reordered: reordered && ts < g.newest,
	}
	// A contradiction carries the time of the event it contradicts, not ts.
	g.newest = max(g.newest, events[0].TS)

	g.recent = append(g.recent, sent{rec: rec, withSource: withSource})
	if len(g.recent) > recentRecords {
		g.recent = g.recent[1:]
	}
	g.events = append(g.events, events...)
	if len(g.events) > recentEvents {
		g.events = g.events[len(g.events)-recentEvents:]
	}
	return rec
}

// dup re-sends a recent good record verbatim.
func (g *generator) dup() Record {
	s := g.recent[g.rng.IntN(len(g.recent))]
	rec := Record{
		Topic:  s.rec.Topic,
		Key:    s.rec.Key,
		Value:  slices.Clone(s.rec.Value),
		Events: slices.Clone(s.rec.Events),
		Dup:    true,
	}
	if s.withSource && g.rng.IntN(2) == 0 {
		rec.Topic = g.oneOf(topics[:]...)
	}
	return rec
}

// event returns an event of m in r; Source is set by fresh.
func event(r *room, m *member, typ codec.Type, value, ts int64) codec.Event {
	return codec.Event{RoomID: r.id, UserID: m.id, Type: typ, Value: value, TS: ts}
}

// singleAction draws one action in r that yields one event.
func (g *generator) singleAction(r *room, ts int64) (string, []codec.Event) {
	joinW, roleW := 4, 5
	if r.present < r.target {
		joinW = 40
	}
	if r.host == nil || !r.host.present || len(r.demote) > 0 {
		roleW = 15
	}
	leaveW := 0
	if r.present > 0 {
		leaveW = 4
	}
	const shareW, spotW = 3, 2
	w := g.rng.IntN(joinW + leaveW + 45 + 12 + 8 + shareW + spotW + roleW)
	switch {
	case w < joinW:
		m := g.pick(r, isAbsent)
		if m == nil {
			m = g.pick(r, anyone) // a join of a member already in
		}
		r.setPresent(m, true)
		return g.oneOf("client", "signal"), []codec.Event{event(r, m, codec.TypeJoin, 0, ts)}
	case w < joinW+leaveW:
		m := g.pick(r, isPresent)
		r.setPresent(m, false)
		return g.oneOf("client", "signal"), []codec.Event{event(r, m, codec.TypeLeave, 0, ts)}
	case w < joinW+leaveW+45:
		m := g.speaker(r)
		return "rtc", []codec.Event{event(r, m, codec.TypeVolume, g.volume(m), ts)}
	case w < joinW+leaveW+45+12:
		m := g.audioToggle(r)
		r.setPresent(m, true)
		m.audio = !m.audio
		return g.oneOf("rtc", "client"), []codec.Event{event(r, m, codec.TypeAudio, b2i(m.audio), ts)}
	case w < joinW+leaveW+45+12+8:
		m := g.somePresent(r)
		r.setPresent(m, true)
		m.video = !m.video
		return g.oneOf("rtc", "client"), []codec.Event{event(r, m, codec.TypeVideo, b2i(m.video), ts)}
	case w < joinW+leaveW+45+12+8+shareW:
		return g.screenShare(r, ts)
	case w < joinW+leaveW+45+12+8+shareW+spotW:
		return g.spotlight(r, ts)
	default:
		m, role := g.roleChange(r)
		r.setPresent(m, true)
		m.role = role
		return "signal", []codec.Event{event(r, m, codec.TypeRole, int64(role), ts)}
	}
}

// arrayAction draws one action in r that yields an array record: mostly a
// volume indication of several speakers.
func (g *generator) arrayAction(r *room, ts int64) (string, []codec.Event) {
	w := g.rng.IntN(100)
	switch {
	case r.present == 0 || r.present < r.target && w < 25:
		// Several members join at once.
		var evs []codec.Event
		for _, m := range g.pickN(r, 2+g.rng.IntN(5), isAbsent) {
			r.setPresent(m, true)
			evs = append(evs, event(r, m, codec.TypeJoin, 0, ts))
		}
		if len(evs) > 0 {
			return g.oneOf("client", "signal"), evs
		}
	case w < 86:
		// Falls through to the volume indication below.
	case w < 92:
		// One member's media state from the client.
		m := g.audioToggle(r)
		r.setPresent(m, true)
		m.audio, m.video = !m.audio, g.rng.IntN(2) == 0
		return g.oneOf("client", "rtc"), []codec.Event{
			event(r, m, codec.TypeAudio, b2i(m.audio), ts),
			event(r, m, codec.TypeVideo, b2i(m.video), ts),
		}
	case w < 96:
		// Host hand-over in one signal record.
		old := r.host
		next := g.pick(r, func(m *member) bool { return m.present && m != old && m.role.Ranked() })
		if old != nil && next != nil {
			demoted := g.demotedRole()
			r.setPresent(old, true) // a role event is an implicit join
			old.role, next.role, r.host = demoted, codec.RoleHost, next
			return "signal", []codec.Event{
				event(r, old, codec.TypeRole, int64(demoted), ts),
				event(r, next, codec.TypeRole, int64(codec.RoleHost), ts),
			}
		}
	default:
		// Several members leave at once (a breakout, a dropped gateway).
		if r.present >= 4 {
			var evs []codec.Event
			for _, m := range g.pickN(r, 2+g.rng.IntN(3), isPresent) {
				r.setPresent(m, false)
				evs = append(evs, event(r, m, codec.TypeLeave, 0, ts))
			}
			return g.oneOf("client", "signal"), evs
		}
	}
	// A volume indication: the loudest present members, audio on first.
	n := 1 + g.rng.IntN(8)
	speakers := g.pickN(r, n, func(m *member) bool { return m.present && m.audio })
	if len(speakers) < n {
		speakers = append(speakers, g.pickN(r, n-len(speakers), func(m *member) bool { return m.present && !m.audio })...)
	}
	if len(speakers) == 0 {
		speakers = []*member{g.pick(r, anyone)}
		r.setPresent(speakers[0], true)
	}
	evs := make([]codec.Event, len(speakers))
	for i, m := range speakers {
		evs[i] = event(r, m, codec.TypeVolume, g.volume(m), ts)
	}
	return "rtc", evs
}

// screenShare starts or stops a screen share in r: the presenter stops, or
// a present member (a host or guest more often) starts presenting; the
// meeting system stops the previous presenter's share at the same time,
// in its own record, some of the time only.
func (g *generator) screenShare(r *room, ts int64) (string, []codec.Event) {
	if s := r.sharer; s != nil && g.rng.IntN(2) == 0 {
		s.share, r.sharer = false, nil
		r.setPresent(s, true)
		return g.oneOf("rtc", "client"), []codec.Event{event(r, s, codec.TypeScreenShare, 0, ts)}
	}
	m := g.pick(r, func(m *member) bool {
		return m.present && m != r.sharer && (m.role == codec.RoleHost || m.role == codec.RoleGuest)
	})
	if m == nil {
		m = g.somePresent(r)
	}
	r.setPresent(m, true)
	m.share = true
	if r.sharer != nil && r.sharer != m && g.rng.IntN(2) == 0 {
		r.sharer.share = false // the old share ends without a record of its own
	}
	r.sharer = m
	return g.oneOf("rtc", "client"), []codec.Event{event(r, m, codec.TypeScreenShare, 1, ts)}
}

// spotlight has the host's client (or signalling) put a member in the
// spotlight or take it out.
func (g *generator) spotlight(r *room, ts int64) (string, []codec.Event) {
	if s := r.spot; s != nil && g.rng.IntN(3) == 0 {
		s.spot, r.spot = false, nil
		r.setPresent(s, true)
		return g.oneOf("client", "signal"), []codec.Event{event(r, s, codec.TypeSpotlight, 0, ts)}
	}
	m := g.pick(r, func(m *member) bool { return m.present && m != r.host })
	if m == nil {
		m = g.somePresent(r)
	}
	r.setPresent(m, true)
	m.spot, r.spot = true, m
	return g.oneOf("client", "signal"), []codec.Event{event(r, m, codec.TypeSpotlight, 1, ts)}
}

// unknownTypes are callbacks of the meeting system that rostrum does not
// rank on.
var unknownTypes = [...]string{"hand_raise", "chat_message", "network_quality", "recording_started", "whiteboard.open", "reaction"}

// unknown returns a good record of a type rostrum does not rank on.
func (g *generator) unknown() Record {
	r := g.pickRoom()
	m := g.pick(r, anyone)
	e := event(r, m, codec.TypeIgnored, 0, g.now)
	e.TypeName = unknownTypes[g.rng.IntN(len(unknownTypes))]
	topic := g.oneOf(topics[:]...)
	e.Source = topicSource(topic)
	g.newest = max(g.newest, e.TS)
	return Record{Topic: topic, Key: r.id, Value: encode([]codec.Event{e}, false, false), Events: []codec.Event{e}, Unknown: true}
}

// audioToggle returns the member whose audio is switched next: mostly one
// that moves the room towards its few unmuted speakers.
func (g *generator) audioToggle(r *room) *member {
	on := 0
	for _, m := range r.members {
		if m.present && m.audio {
			on++
		}
	}
	unmute := g.rng.IntN(10) < 3
	if on < r.speakers {
		unmute = g.rng.IntN(10) < 7
	}
	if h := r.host; unmute && h != nil && h.present && !h.audio && g.rng.IntN(3) == 0 {
		return h // the host speaks more than most
	}
	if m := g.pick(r, func(m *member) bool { return m.present && m.audio != unmute }); m != nil {
		return m
	}
	return g.somePresent(r)
}

// speaker returns the member a single volume indication is about.
func (g *generator) speaker(r *room) *member {
	if g.rng.IntN(10) < 7 {
		if m := g.pick(r, func(m *member) bool { return m.present && m.audio }); m != nil {
			return m
		}
	}
	m := g.somePresent(r)
	r.setPresent(m, true)
	return m
}

// volume returns a volume reading for m: loud or quiet when its audio is
// on, mostly 0 when it is off.
func (g *generator) volume(m *member) int64 {
	switch {
	case m.audio && g.rng.IntN(10) < 6:
		return 150 + g.rng.Int64N(codec.MaxVolume-150+1)
	case m.audio:
		return g.rng.Int64N(121)
	case g.rng.IntN(10) == 0:
		return 1 + g.rng.Int64N(5)
	}
	return 0
}

// roleChange picks the next role event in r: a former host's new role, a
// new host, an excluded role given or taken back, or a guest or cohost.
func (g *generator) roleChange(r *room) (*member, codec.Role) {
	if len(r.demote) > 0 {
		m := r.demote[0]
		r.demote = r.demote[1:]
		if r.host != m {
			return m, g.demotedRole()
		}
	}
	w := g.rng.IntN(100)
	if r.host == nil || !r.host.present || w < 30 {
		if m := g.pick(r, func(m *member) bool { return m.present && m != r.host && m.role.Ranked() }); m != nil {
			if r.host != nil {
				r.demote = append(r.demote, r.host)
			}
			r.host = m
			return m, codec.RoleHost
		}
	}
	switch {
	case w < 55:
		excluded := []codec.Role{codec.RoleBroadcastControl, codec.RoleScreenPicker, codec.RoleAssistant}
		if m := g.pick(r, func(m *member) bool { return m.present && m != r.host && m.role.Ranked() }); m != nil {
			return m, excluded[g.rng.IntN(len(excluded))]
		}
	case w < 75:
		if m := g.pick(r, func(m *member) bool { return !m.role.Ranked() }); m != nil {
			return m, []codec.Role{codec.RoleStudent, codec.RoleGuest}[g.rng.IntN(2)]
		}
	}
	m := g.somePresent(r)
	if m == r.host {
		return m, codec.RoleHost // the signalling service repeats itself
	}
	switch w := g.rng.IntN(20); {
	case w < 10:
		return m, codec.RoleStudent
	case w < 17:
		return m, codec.RoleGuest
	}
	return m, codec.RoleCohost
}

// demotedRole is the role of a former host.
func (g *generator) demotedRole() codec.Role {
	if g.rng.IntN(2) == 0 {
		return codec.RoleCohost
	}
	return codec.RoleStudent
}

// contradict returns an event that disagrees with a recent event at the
// same millisecond, from another topic where the type allows it: audio on
// against off, a leave against a join, another volume or role. Only the
// tie-breaks of last-writer-wins decide which one holds.
func (g *generator) contradict() (string, []codec.Event) {
	e := g.events[g.rng.IntN(len(g.events))]
	var topic string
	switch e.Type {
	case codec.TypeJoin:
		e.Type, topic = codec.TypeLeave, g.oneOf("client", "signal")
	case codec.TypeLeave:
		e.Type, topic = codec.TypeJoin, g.oneOf("client", "signal")
	case codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare, codec.TypeSpotlight:
		e.Value, topic = 1-e.Value, g.oneOf("rtc", "client")
	case codec.TypeVolume:
		e.Value, topic = (e.Value+1+g.rng.Int64N(codec.MaxVolume))%(codec.MaxVolume+1), "rtc"
	case codec.TypeRole:
		e.Value, topic = int64(codec.RoleStudent)+(e.Value+g.rng.Int64N(6))%7, "signal"
	}
	return topic, []codec.Event{e}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
