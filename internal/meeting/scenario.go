package meeting

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rostrumhq/rostrum/codec"
)

// BaseTS is the event time at which every generated meeting starts, Unix ms
// (2025-11-21T04:40:00Z, inside the default score window).
const BaseTS = int64(1763700000000)

// tick is the volume indication interval of the simulated RTC service: every
// member with the microphone on reports a volume this often.
const tick = 200 // ms

// Scenario describes a kind of meeting. The generator turns it into events:
// talkers take the floor in turns and speak at their own loudness, with
// pauses between words; members with the microphone open but not speaking
// report background noise (with the odd cough); questions, interjections,
// hand-overs of the host role, joins and leaves happen at the given rates;
// presenters share their screen in turn, and the host puts each new
// presenter in the spotlight for a while.
type Scenario struct {
	Name        string
	Description string
	Members     int           // members of the room
	Talkers     int           // members who take the floor in turns; the first is the host
	Noisy       int           // audience members with the microphone on, not speaking
	TurnMean    time.Duration // mean length of a turn at the floor
	HostShare   float64       // share of turns taken by the host
	Interject   float64       // short remarks by another talker, per minute
	MuteBetween float64       // probability that a talker mutes after its turn
	Handover    time.Duration // the host role passes to the next talker this often; 0: never
	Questions   float64       // audience questions per minute (unmute, ask, mute)
	Churn       float64       // audience leaves and joins, per minute
	Video       float64       // share of members with the camera on
	// ShareEvery: the screen share passes to the next talker this often (the
	// old presenter stops, the new one starts within a second); 0: nobody
	// shares.
	ShareEvery time.Duration
	// SpotlightFor: the host spotlights each new presenter for this long;
	// 0: never.
	SpotlightFor time.Duration
}

// Scenarios returns the named scenarios, in report order.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "lecture", Description: "one lecturer, 200 listeners of whom 25 have a noisy open microphone, a question now and then",
			Members: 200, Talkers: 1, Noisy: 25, TurnMean: 90 * time.Second, HostShare: 1,
			Questions: 0.7, Churn: 4, Video: 0.3},
		{Name: "discussion", Description: "a lively discussion: 16 speakers taking turns, interjecting and muting between turns, 40 members",
			Members: 40, Talkers: 16, Noisy: 4, TurnMean: 8 * time.Second, HostShare: 0.15,
			Interject: 8, MuteBetween: 0.3, Churn: 1, Video: 0.6},
		{Name: "townhall", Description: "a town hall: 400 members, a host and 3 panelists handing over the host role every 2 min, audience questions",
			Members: 400, Talkers: 4, Noisy: 15, TurnMean: 40 * time.Second, HostShare: 0.4,
			Interject: 1, Handover: 2 * time.Minute, Questions: 1, Churn: 8, Video: 0.2},
		{Name: "handover", Description: "screen-share hand-overs: 60 members, 8 talkers discussing; the presenter changes every 3 min and the host spotlights each new one for 30 s",
			Members: 60, Talkers: 8, Noisy: 6, TurnMean: 10 * time.Second, HostShare: 0.2,
			Interject: 4, MuteBetween: 0.3, Churn: 2, Video: 0.5, ShareEvery: 3 * time.Minute, SpotlightFor: 30 * time.Second},
	}
}

// ScenarioByName returns the scenario called name.
func ScenarioByName(name string) (Scenario, error) {
	var names []string
	for _, s := range Scenarios() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return Scenario{}, fmt.Errorf("meeting: unknown scenario %q (have %v)", name, names)
}

// simMember is one member in the generator.
type simMember struct {
	id           string
	role         codec.Role
	present      bool
	audio, video bool
	talker       bool
	level        float64 // loudness while speaking
	noise        float64 // background noise level with an open microphone
	phase        int64   // offset of its volume reports within a tick, ms
	speakUntil   int64   // speaking while t < speakUntil
	muteAfter    bool    // mutes when its current remark ends
}

// gen is one Generate call.
type gen struct {
	sc      Scenario
	rng     *rand.Rand
	room    string
	ms      []*simMember
	events  []codec.Event
	host    int // index of the current host
	floor   int // index of the talker holding the floor, -1: none
	floorTo int64
	// The floor holder is silent while a question is asked: quietFrom ≤ t < quietTo.
	quietFrom, quietTo int64
	presenter          int   // index of the member sharing, -1: none
	spotOff            int64 // when the spotlight goes off, 0: not on
}

// Generate returns the events of scenario sc over d, sorted by event time,
// starting at BaseTS. The same scenario, d and seed give the same events.
func Generate(sc Scenario, d time.Duration, seed uint64) []codec.Event {
	h := fnv.New64a()
	h.Write([]byte(sc.Name))
	g := &gen{sc: sc, rng: rand.New(rand.NewPCG(seed, h.Sum64())), room: "r-" + sc.Name, floor: -1, presenter: -1}
	g.start()
	end := BaseTS + d.Milliseconds()
	for t := BaseTS; t < end; t += tick {
		g.step(t)
	}
	slices.SortStableFunc(g.events, func(a, b codec.Event) int { return int(a.TS - b.TS) })
	return g.events
}

func (g *gen) emit(m *simMember, typ codec.Type, value, ts int64) {
	g.events = append(g.events, codec.Event{RoomID: g.room, UserID: m.id, Type: typ, Value: value, TS: ts})
}

func (g *gen) setAudio(m *simMember, on bool, ts int64) {
	if m.audio != on {
		m.audio = on
		g.emit(m, codec.TypeAudio, b2i(on), ts)
	}
}

// start puts the room together during its first 3 seconds.
func (g *gen) start() {
	sc := g.sc
	for i := range sc.Members {
		m := &simMember{id: fmt.Sprintf("u-%d", i), role: codec.RoleStudent, phase: g.rng.Int64N(tick)}
		m.talker = i < sc.Talkers
		m.level = 350 + 400*g.rng.Float64()
		m.noise = 5 + 70*g.rng.Float64()
		g.ms = append(g.ms, m)
		// A tenth of the audience arrives later (churn).
		if !m.talker && i >= sc.Talkers+sc.Noisy && g.rng.IntN(10) == 0 {
			continue
		}
		at := BaseTS + g.rng.Int64N(3000)
		m.present = true
		g.emit(m, codec.TypeJoin, 0, at)
		switch {
		case i == 0:
			m.role = codec.RoleHost
		case m.talker && sc.Handover > 0:
			m.role = codec.RoleCohost
		case m.talker:
			m.role = codec.RoleGuest
		}
		if m.role != codec.RoleStudent {
			g.emit(m, codec.TypeRole, int64(m.role), at+1)
		}
		if m.talker || i < sc.Talkers+sc.Noisy {
			g.setAudio(m, true, at+2)
		}
		if g.rng.Float64() < sc.Video || i == 0 {
			m.video = true
			g.emit(m, codec.TypeVideo, 1, at+3)
		}
	}
	// A meeting assistant is present but never ranked.
	a := &simMember{id: "assistant-1", present: true, audio: true, noise: 30}
	g.emit(a, codec.TypeJoin, 0, BaseTS+500)
	g.emit(a, codec.TypeRole, int64(codec.RoleAssistant), BaseTS+501)
	g.emit(a, codec.TypeAudio, 1, BaseTS+502)
	g.host, g.floor, g.floorTo = 0, 0, BaseTS+3000+g.turn()
	g.ms[0].speakUntil = g.floorTo
}

// turn draws the length of a turn at the floor, ms.
func (g *gen) turn() int64 {
	mean := float64(g.sc.TurnMean.Milliseconds())
	return int64(math.Min(4*mean, math.Max(2000, mean*g.rng.ExpFloat64())))
}

// chance reports an event of rate perMin happening within one tick.
func (g *gen) chance(perMin float64) bool {
	return g.rng.Float64() < perMin*tick/60000
}

// step advances the meeting by one tick starting at t.
func (g *gen) step(t int64) {
	sc := g.sc
	// The floor passes on when the turn ends.
	if t >= g.floorTo && t >= g.quietTo {
		prev := g.ms[g.floor]
		if prev.talker && g.floor != g.host && g.rng.Float64() < sc.MuteBetween {
			g.setAudio(prev, false, t+300+g.rng.Int64N(700))
		}
		next := g.host
		if sc.Talkers > 1 && g.rng.Float64() >= sc.HostShare {
			for next == g.host || next == g.floor {
				next = g.rng.IntN(sc.Talkers)
			}
		}
		m := g.ms[next]
		start := t + 300 + g.rng.Int64N(1500) // a pause between turns
		if !m.present {
			m.present = true
			g.emit(m, codec.TypeJoin, 0, start-200)
		}
		g.setAudio(m, true, start-100)
		g.floor, g.floorTo = next, start+g.turn()
		m.speakUntil = g.floorTo
	}
	if sc.Interject > 0 && g.chance(sc.Interject) && sc.Talkers > 1 {
		if i := g.rng.IntN(sc.Talkers); i != g.floor && g.ms[i].present {
			m := g.ms[i]
			m.muteAfter = !m.audio
			g.setAudio(m, true, t)
			m.speakUntil = t + 400 + g.rng.Int64N(1100)
		}
	}
	if sc.Questions > 0 && g.chance(sc.Questions) {
		if m := g.pick(func(m *simMember) bool { return m.present && !m.talker && !m.audio }); m != nil {
			g.setAudio(m, true, t)
			m.muteAfter = true
			m.speakUntil = t + 1000 + 5000 + g.rng.Int64N(10000)
			g.quietFrom, g.quietTo = t, m.speakUntil+500
			g.floorTo = max(g.floorTo, g.quietTo+2000) // the host answers
			g.ms[g.floor].speakUntil = g.floorTo
		}
	}
	if sc.Handover > 0 && (t-BaseTS) > 0 && (t-BaseTS)%sc.Handover.Milliseconds() == 0 {
		old := g.ms[g.host]
		g.host = (g.host + 1) % sc.Talkers
		nh := g.ms[g.host]
		nh.role, old.role = codec.RoleHost, codec.RoleCohost
		g.emit(nh, codec.TypeRole, int64(codec.RoleHost), t)
		g.emit(old, codec.TypeRole, int64(codec.RoleCohost), t+50)
		g.floor, g.floorTo, g.quietFrom, g.quietTo = g.host, t+1000+g.turn(), 0, 0
		g.setAudio(nh, true, t+100)
		nh.speakUntil = g.floorTo
		old.speakUntil = t
	}
	if every := sc.ShareEvery.Milliseconds(); every > 0 && (t-BaseTS)%every == 4000 {
		// The screen share passes on: the old presenter stops, the next
		// one starts within a second and takes the floor.
		next := (g.presenter + 1) % sc.Talkers
		if g.presenter >= 0 {
			g.emit(g.ms[g.presenter], codec.TypeScreenShare, 0, t)
		}
		m := g.ms[next]
		if !m.present {
			m.present = true
			g.emit(m, codec.TypeJoin, 0, t)
		}
		g.presenter = next
		g.emit(m, codec.TypeScreenShare, 1, t+200+g.rng.Int64N(800))
		if sc.SpotlightFor > 0 && next != g.host {
			g.emit(m, codec.TypeSpotlight, 1, t+1000)
			g.spotOff = t + 1000 + sc.SpotlightFor.Milliseconds()
		}
	}
	if g.spotOff > 0 && t >= g.spotOff {
		g.emit(g.ms[g.presenter], codec.TypeSpotlight, 0, t)
		g.spotOff = 0
	}
	if sc.Churn > 0 && g.chance(sc.Churn) {
		if g.rng.IntN(2) == 0 {
			if m := g.pick(func(m *simMember) bool { return m.present && !m.talker }); m != nil {
				m.present, m.audio = false, false
				g.emit(m, codec.TypeLeave, 0, t+g.rng.Int64N(tick))
			}
		} else if m := g.pick(func(m *simMember) bool { return !m.present && !m.talker }); m != nil {
			m.present = true
			at := t + g.rng.Int64N(tick)
			g.emit(m, codec.TypeJoin, 0, at)
			if g.rng.IntN(3) == 0 { // joins with the microphone open
				g.setAudio(m, true, at+1)
			}
		}
	}
	// Volume reports of every open microphone.
	for _, m := range g.ms {
		if !m.present || !m.audio {
			continue
		}
		at := t + m.phase
		var v float64
		speaking := at < m.speakUntil && !(m == g.ms[g.floor] && g.quietFrom <= at && at < g.quietTo)
		switch {
		case speaking && g.rng.IntN(5) == 0:
			v = 30 + 120*g.rng.Float64() // between words
		case speaking:
			v = m.level + 150*g.rng.NormFloat64()
		case g.rng.IntN(200) == 0:
			v = 150 + 200*g.rng.Float64() // a cough, a chair
		default:
			v = m.noise * (1 + 0.3*g.rng.NormFloat64())
		}
		g.emit(m, codec.TypeVolume, int64(math.Max(0, math.Min(codec.MaxVolume, v))), at)
		if m.muteAfter && at >= m.speakUntil {
			m.muteAfter = false
			g.setAudio(m, false, at+300+g.rng.Int64N(500))
		}
	}
}

// pick returns a random member for which ok holds, or nil.
func (g *gen) pick(ok func(*simMember) bool) *simMember {
	var c []*simMember
	for _, m := range g.ms {
		if ok(m) {
			c = append(c, m)
		}
	}
	if len(c) == 0 {
		return nil
	}
	return c[g.rng.IntN(len(c))]
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
