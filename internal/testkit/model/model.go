package model

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rostrumhq/rostrum/codec"
)

// Values of the presence register.
const (
	PresenceIn   int64 = 1 // the newest presence event is a join or an implicit join
	PresenceLeft int64 = 2 // the newest presence event is a leave
)

// Register is a last-writer-wins register: it holds the value of the event
// with the greatest (TS, Value) pair written to it.
type Register struct {
	Value int64
	TS    int64 // Unix ms of the event that wrote Value; 0 before any write
}

// write stores value if (ts, value) is greater than (r.TS, r.Value).
func (r *Register) write(value, ts int64) {
	if ts > r.TS || ts == r.TS && value > r.Value {
		r.Value, r.TS = value, ts
	}
}

// MemberState is everything the model knows about one member of a room.
type MemberState struct {
	Audio       Register // 0 off, 1 on
	Volume      Register // 0..999
	Video       Register // 0 off, 1 on
	Role        Register // a codec.Role
	ScreenShare Register // 0 off, 1 sharing
	Spotlight   Register // 0 off, 1 in the spotlight
	Presence    Register // 0 before any event, then PresenceIn or PresenceLeft
	Time        int64    // greatest ts of all events applied, Unix ms
}

// newMemberState returns the state of a member no event has touched yet.
func newMemberState() *MemberState {
	return &MemberState{Role: Register{Value: int64(codec.RoleStudent)}}
}

// Ranked reports whether the member is in its room's ranking: present, with
// a role that takes part.
func (s MemberState) Ranked() bool {
	return s.Presence.Value == PresenceIn && codec.Role(s.Role.Value).Ranked()
}

// Member is one ranked member, as the ranking shows it.
type Member struct {
	UserID      string
	Audio       uint8
	Volume      uint16
	Video       uint8
	Role        codec.Role
	ScreenShare uint8
	Spotlight   uint8
	TS          int64   // the member's time: greatest ts of its events, Unix ms
	Score       float64 // the score the ranking rules give the fields above (see score)
}

// Model holds the member states of every room it has seen an event of.
type Model struct {
	rules   []string // the ranking rules' field names, most significant first
	epochMS int64
	rooms   map[string]map[string]*MemberState // room id → user id → state
}

// New returns an empty model that ranks members by meeting's rules and
// epoch. It takes only those two settings from meeting: the model computes
// its scores with its own arithmetic (see score), never with the codec's.
func New(meeting *codec.Meeting) *Model {
	return &Model{rules: strings.Split(meeting.Rules().String(), ","), epochMS: meeting.Epoch().UnixMilli(),
		rooms: make(map[string]map[string]*MemberState)}
}

// window is the span of event times every rule set scores: 2^38 ms.
const window = int64(1) << 38

// fieldBits are the widths of the ranking rules' fields.
var fieldBits = map[string]uint{"spotlight": 1, "screen_share": 1, "audio": 1, "volume": 10, "video": 1, "role": 3}

// score is the model's own score of a ranked member: the rules' fields as
// one integer, most significant first, then the time since the epoch in the
// unit that keeps the 2^38 ms window in the bits left (53 bits in all): a
// field takes fieldBits bits, the time min(38, 53 - fields' bits) bits,
// counting units of 2^(38 - time bits) ms.
func (m *Model) score(mem Member) float64 {
	var x uint64
	used := uint(0)
	for _, name := range m.rules {
		var v uint64
		switch name {
		case "spotlight":
			v = uint64(mem.Spotlight)
		case "screen_share":
			v = uint64(mem.ScreenShare)
		case "audio":
			v = uint64(mem.Audio)
		case "volume":
			v = uint64(mem.Volume)
		case "video":
			v = uint64(mem.Video)
		case "role":
			v = uint64(mem.Role)
		}
		x = x<<fieldBits[name] | v
		used += fieldBits[name]
	}
	timeBits := min(38, 53-used)
	unit := int64(1) << (38 - timeBits)
	x = x<<timeBits | uint64((mem.TS-m.epochMS)/unit)
	return float64(x)
}

// Apply applies one meeting event; board events (gift, score, …) and
// events of types rostrum does not know (codec.TypeIgnored) never touch a
// meeting ranking and are ignored. Events may come in any order and
// more than once.
//
// Apply panics on an event that codec's Decoder never returns (an empty id,
// an unknown type, a value out of its type's range), and on one whose ts the
// meeting codec cannot score (before its epoch or past its window): both are
// bugs in the test that feeds the model.
func (m *Model) Apply(ev codec.Event) {
	if ev.Type.Board() || ev.Type == codec.TypeIgnored {
		return
	}
	if err := m.check(ev); err != nil {
		panic(fmt.Sprintf("model: apply %+v: %v", ev, err))
	}
	room := m.rooms[ev.RoomID]
	if room == nil {
		room = make(map[string]*MemberState)
		m.rooms[ev.RoomID] = room
	}
	s := room[ev.UserID]
	if s == nil {
		s = newMemberState()
		room[ev.UserID] = s
	}

	s.Time = max(s.Time, ev.TS)
	switch ev.Type {
	case codec.TypeLeave:
		s.Presence.write(PresenceLeft, ev.TS)
		return
	case codec.TypeAudio:
		s.Audio.write(ev.Value, ev.TS)
	case codec.TypeVolume:
		s.Volume.write(ev.Value, ev.TS)
	case codec.TypeVideo:
		s.Video.write(ev.Value, ev.TS)
	case codec.TypeRole:
		s.Role.write(ev.Value, ev.TS)
	case codec.TypeScreenShare:
		s.ScreenShare.write(ev.Value, ev.TS)
	case codec.TypeSpotlight:
		s.Spotlight.write(ev.Value, ev.TS)
	}
	// Every event but a leave is a join at its ts, join itself included.
	s.Presence.write(PresenceIn, ev.TS)
}

// check returns why ev is not an event Apply accepts, or nil.
func (m *Model) check(ev codec.Event) error {
	if ev.RoomID == "" || ev.UserID == "" {
		return fmt.Errorf("empty room or user id")
	}
	var hi int64
	switch ev.Type {
	case codec.TypeJoin, codec.TypeLeave:
		hi = 0
	case codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare, codec.TypeSpotlight:
		hi = 1
	case codec.TypeVolume:
		hi = codec.MaxVolume
	case codec.TypeRole:
		if ev.Value < int64(codec.RoleStudent) || ev.Value > int64(codec.RoleAssistant) {
			return fmt.Errorf("role value %d is not a role", ev.Value)
		}
		hi = int64(codec.RoleAssistant)
	default:
		return fmt.Errorf("type %d is not a meeting event type", ev.Type)
	}
	if ev.Value < 0 || ev.Value > hi {
		return fmt.Errorf("%s value %d is out of range 0..%d", ev.Type, ev.Value, hi)
	}
	// The member's time is the greatest ts of its events, so checking each
	// ts here means every score Ranking computes can be encoded.
	if ev.TS < m.epochMS || ev.TS-m.epochMS >= window {
		return fmt.Errorf("ts %d outside the score window [%d, %d)", ev.TS, m.epochMS, m.epochMS+window)
	}
	return nil
}

// Rooms returns the ids of the rooms that have received any event, ranked
// members or not, in increasing byte order.
func (m *Model) Rooms() []string {
	return slices.Sorted(maps.Keys(m.rooms))
}

// State returns the state of user in room, and whether any event for that
// member has been applied.
func (m *Model) State(room, user string) (MemberState, bool) {
	s, ok := m.rooms[room][user]
	if !ok {
		return MemberState{}, false
	}
	return *s, true
}

// Ranking returns the ranked members of room, highest score first, equal
// scores by user id, greatest first (Redis ZREVRANGE order). It returns an
// empty slice for a room without ranked members or without events.
func (m *Model) Ranking(room string) []Member {
	ranking := []Member{}
	for user, s := range m.rooms[room] {
		if !s.Ranked() {
			continue
		}
		mem := Member{
			UserID:      user,
			Audio:       uint8(s.Audio.Value),
			Volume:      uint16(s.Volume.Value),
			Video:       uint8(s.Video.Value),
			Role:        codec.Role(s.Role.Value),
			ScreenShare: uint8(s.ScreenShare.Value),
			Spotlight:   uint8(s.Spotlight.Value),
			TS:          s.Time,
		}
		// Apply checked every field and every ts.
		mem.Score = m.score(mem)
		ranking = append(ranking, mem)
	}
	slices.SortFunc(ranking, func(a, b Member) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(b.UserID, a.UserID)
	})
	return ranking
}

// Top returns the first n members of Ranking(room), or all of them when
// there are fewer; none when n <= 0.
func (m *Model) Top(room string, n int) []Member {
	r := m.Ranking(room)
	return r[:max(0, min(n, len(r)))]
}
