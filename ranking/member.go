package ranking

import (
	"encoding/binary"
	"errors"

	"github.com/rostrumhq/rostrum/codec"
)

// Presence register values. A leave is the larger value so that it wins a
// tie with a join at the same event time.
const (
	PresenceIn   = 1
	PresenceLeft = 2
)

// MemberState is one member's state in a room: a last-writer-wins register
// (value, event time) per field, and the newest event time seen.
//
// A register takes an update whose time is newer, or equally new with a
// larger value. That deterministic tie-break makes Merge commutative,
// associative and idempotent, so the state never depends on the order in
// which the three callback topics deliver, and applying an event twice has
// no second effect. The sink's Lua apply script (sink/lua/apply.lua) implements the same
// rule on the stored form; a test checks that the two agree.
//
// The zero value is "no information": merging it changes nothing. A member
// that has been seen but never told otherwise has audio off, volume 0, video
// off and role student (see Effective).
type MemberState struct {
	Audio, Video uint8
	Volume       uint16
	Role         codec.Role
	Presence     uint8
	AudioTS      int64
	VolumeTS     int64
	VideoTS      int64
	RoleTS       int64
	PresenceTS   int64
	MaxTS        int64 // newest event time of any event of this member
}

// StateSize is the length of the stored (packed) form of a MemberState.
const StateSize = 5 + 2 + 8 + 5*4

// Apply folds one meeting event into the state; a board event (gift,
// score, …) changes nothing.
func (s *MemberState) Apply(ev *codec.Event) {
	if ev.Type.Board() {
		return
	}
	switch ev.Type {
	case codec.TypeAudio:
		lww8(&s.Audio, &s.AudioTS, uint8(ev.Value), ev.TS)
	case codec.TypeVideo:
		lww8(&s.Video, &s.VideoTS, uint8(ev.Value), ev.TS)
	case codec.TypeVolume:
		if ev.TS > s.VolumeTS || (ev.TS == s.VolumeTS && uint16(ev.Value) > s.Volume) {
			s.Volume, s.VolumeTS = uint16(ev.Value), ev.TS
		}
	case codec.TypeRole:
		r := uint8(s.Role)
		lww8(&r, &s.RoleTS, uint8(ev.Value), ev.TS)
		s.Role = codec.Role(r)
	}
	p := uint8(PresenceIn)
	if ev.Type == codec.TypeLeave {
		p = PresenceLeft
	}
	lww8(&s.Presence, &s.PresenceTS, p, ev.TS)
	if ev.TS > s.MaxTS {
		s.MaxTS = ev.TS
	}
}

// Merge folds another state (for example an update built by Apply) into s.
func (s *MemberState) Merge(o *MemberState) {
	lww8(&s.Audio, &s.AudioTS, o.Audio, o.AudioTS)
	lww8(&s.Video, &s.VideoTS, o.Video, o.VideoTS)
	if o.VolumeTS > s.VolumeTS || (o.VolumeTS == s.VolumeTS && o.Volume > s.Volume) {
		s.Volume, s.VolumeTS = o.Volume, o.VolumeTS
	}
	r := uint8(s.Role)
	lww8(&r, &s.RoleTS, uint8(o.Role), o.RoleTS)
	s.Role = codec.Role(r)
	lww8(&s.Presence, &s.PresenceTS, o.Presence, o.PresenceTS)
	if o.MaxTS > s.MaxTS {
		s.MaxTS = o.MaxTS
	}
}

func lww8(v *uint8, ts *int64, nv uint8, nts int64) {
	if nts > *ts || (nts == *ts && nv > *v) {
		*v, *ts = nv, nts
	}
}

// Effective returns the state as ranked: a role never set is student.
func (s MemberState) Effective() MemberState {
	if s.Role == 0 {
		s.Role = codec.RoleStudent
	}
	return s
}

// Ranked reports whether the member takes part in the ranking: present, with
// a role that ranks.
func (s MemberState) Ranked() bool {
	return s.Presence == PresenceIn && s.Effective().Role.Ranked()
}

// Score encodes the ranked member's score with the meeting layout.
func (s MemberState) Score(m *codec.Meeting) (float64, error) {
	e := s.Effective()
	return m.Encode(codec.MemberScore{Audio: e.Audio, Volume: e.Volume, Video: e.Video, Role: e.Role, TS: e.MaxTS})
}

// AppendBinary appends the packed form stored in Redis (35 bytes, little-
// endian): audio, video, presence, role (1 byte each), the format version (1),
// volume (2 bytes), MaxTS (8 bytes), then the times of audio, volume, video,
// role and presence as 4-byte deltas below MaxTS, 0xFFFFFFFF meaning "never
// set". A field more than 2^32-2 ms (49.7 days) older than the member's newest
// event is stored as exactly that old: rooms expire long before (--room-ttl).
// The Lua scripts read and write the same layout with
// struct.pack("<BBBBBHlI4I4I4I4I4", …).
func (s *MemberState) AppendBinary(b []byte) []byte {
	b = append(b, s.Audio, s.Video, s.Presence, uint8(s.Role), stateVersion)
	b = binary.LittleEndian.AppendUint16(b, s.Volume)
	b = binary.LittleEndian.AppendUint64(b, uint64(s.MaxTS))
	for _, t := range [...]int64{s.AudioTS, s.VolumeTS, s.VideoTS, s.RoleTS, s.PresenceTS} {
		d := uint32(tsNone)
		if t != 0 {
			d = uint32(min(s.MaxTS-t, tsMaxDelta))
		}
		b = binary.LittleEndian.AppendUint32(b, d)
	}
	return b
}

const (
	stateVersion = 1         // format of the packed state; the scripts refuse others
	tsNone       = 1<<32 - 1 // delta of a field never set
	tsMaxDelta   = 1<<32 - 2
)

// errStateSize is returned for a stored state of the wrong length.
var errStateSize = errors.New("ranking: stored member state has the wrong size or format version")

// UnmarshalBinary reads the packed form written by AppendBinary.
func (s *MemberState) UnmarshalBinary(b []byte) error {
	if len(b) != StateSize || b[4] != stateVersion {
		return errStateSize
	}
	s.Audio, s.Video, s.Presence, s.Role = b[0], b[1], b[2], codec.Role(b[3])
	s.Volume = binary.LittleEndian.Uint16(b[5:])
	s.MaxTS = int64(binary.LittleEndian.Uint64(b[7:]))
	ts := [...]*int64{&s.AudioTS, &s.VolumeTS, &s.VideoTS, &s.RoleTS, &s.PresenceTS}
	for i, p := range ts {
		*p = 0
		if d := binary.LittleEndian.Uint32(b[15+4*i:]); d != tsNone {
			*p = s.MaxTS - int64(d)
		}
	}
	return nil
}
