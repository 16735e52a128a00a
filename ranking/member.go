package ranking

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

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
// no second effect. Merge is the only production implementation of the
// rule: the sink plans every room's apply with it, and its Lua scripts
// store the states it merged; internal/testkit/model restates the rule as
// the tests' oracle.
//
// The zero value is "no information": merging it changes nothing. A member
// that has been seen but never told otherwise has audio off, volume 0, video
// off, role student, no screen share and no spotlight (see Effective).
type MemberState struct {
	Audio, Video           uint8
	ScreenShare, Spotlight uint8
	Volume                 uint16
	Role                   codec.Role
	Presence               uint8
	AudioTS                int64
	VolumeTS               int64
	VideoTS                int64
	RoleTS                 int64
	PresenceTS             int64
	ScreenShareTS          int64
	SpotlightTS            int64
	MaxTS                  int64 // newest event time of any event of this member
}

// StateSize is the longest stored (packed) form of a MemberState; see
// AppendBinary.
const StateSize = 11 + 4*registers

// registers is the number of registers with a time in the packed form.
const registers = 7

// Apply folds one meeting event into the state; a board event (gift,
// score, …) and an ignored one change nothing.
func (s *MemberState) Apply(ev *codec.Event) {
	if ev.Type.Board() || ev.Type == codec.TypeIgnored {
		return
	}
	switch ev.Type {
	case codec.TypeAudio:
		lww8(&s.Audio, &s.AudioTS, uint8(ev.Value), ev.TS)
	case codec.TypeVideo:
		lww8(&s.Video, &s.VideoTS, uint8(ev.Value), ev.TS)
	case codec.TypeScreenShare:
		lww8(&s.ScreenShare, &s.ScreenShareTS, uint8(ev.Value), ev.TS)
	case codec.TypeSpotlight:
		lww8(&s.Spotlight, &s.SpotlightTS, uint8(ev.Value), ev.TS)
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
	lww8(&s.ScreenShare, &s.ScreenShareTS, o.ScreenShare, o.ScreenShareTS)
	lww8(&s.Spotlight, &s.SpotlightTS, o.Spotlight, o.SpotlightTS)
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
	return m.Encode(codec.MemberScore{Spotlight: e.Spotlight, ScreenShare: e.ScreenShare, Audio: e.Audio,
		Volume: e.Volume, Video: e.Video, Role: e.Role, TS: e.MaxTS})
}

// The packed form, format version 2 (AppendBinary), little-endian:
//
//	offset  size  field
//	0       1     format version: 2
//	1       3     values, bits from the least significant: audio 0,
//	              video 1, screen share 2, spotlight 3, presence 4-5,
//	              role 6-8, volume 9-18
//	4       1     mask: bit j set when register j has a time below (j: 0
//	              audio, 1 volume, 2 video, 3 role, 4 presence, 5 screen
//	              share, 6 spotlight)
//	5       6     MaxTS, Unix ms
//	11      4·k   the time of each register of the mask, in that order, as a
//	              delta below MaxTS (k = registers set, 0..7)
//
// A register never set takes no bytes: a typical member (audio, volume and
// presence set) takes 23 bytes, every register set 39 (StateSize). A time
// more than 2^32-1 ms (49.7 days) older than the member's newest event is
// stored as exactly that old: rooms expire long before (--room-ttl).
// Version 2 is the only format: a state of any other is an error.
const (
	stateVersion = 2 // format of the packed state AppendBinary writes
	tsMaxDelta   = 1<<32 - 1
	maxTS48      = 1<<48 - 1
)

// times returns pointers to the registers' times in mask order.
func (s *MemberState) times() [registers]*int64 {
	return [registers]*int64{&s.AudioTS, &s.VolumeTS, &s.VideoTS, &s.RoleTS, &s.PresenceTS, &s.ScreenShareTS, &s.SpotlightTS}
}

// AppendBinary appends the packed form stored in Redis (format version 2,
// above). The Lua scripts read and write the same layout.
func (s *MemberState) AppendBinary(b []byte) []byte {
	vals := uint32(s.Audio&1) | uint32(s.Video&1)<<1 | uint32(s.ScreenShare&1)<<2 | uint32(s.Spotlight&1)<<3 |
		uint32(s.Presence&3)<<4 | uint32(s.Role&7)<<6 | uint32(s.Volume&1023)<<9
	var mask uint8
	ts := s.times()
	for j, t := range ts {
		if *t != 0 {
			mask |= 1 << j
		}
	}
	mx := uint64(min(max(s.MaxTS, 0), maxTS48))
	b = append(b, stateVersion, byte(vals), byte(vals>>8), byte(vals>>16), mask,
		byte(mx), byte(mx>>8), byte(mx>>16), byte(mx>>24), byte(mx>>32), byte(mx>>40))
	for _, t := range ts {
		if *t != 0 {
			b = binary.LittleEndian.AppendUint32(b, uint32(min(max(int64(mx)-*t, 0), tsMaxDelta)))
		}
	}
	return b
}

// errStateSize is returned for a state of format version 2 whose length
// does not match its mask, or with unused bits set.
var errStateSize = errors.New("ranking: stored member state has the wrong size or unused bits set")

// UnmarshalBinary reads the packed form written by AppendBinary. A state
// whose first byte is not format version 2 is an error naming it, and so is
// one whose length does not match its mask.
func (s *MemberState) UnmarshalBinary(b []byte) error {
	if len(b) == 0 || b[0] != stateVersion {
		return fmt.Errorf("ranking: stored member state of %d bytes is not of format version %d", len(b), stateVersion)
	}
	if len(b) < 11 {
		return errStateSize
	}
	vals := uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16
	mask := b[4]
	if mask>>registers != 0 || vals>>19 != 0 || len(b) != 11+4*bits.OnesCount8(mask) {
		return errStateSize
	}
	*s = MemberState{
		Audio: uint8(vals & 1), Video: uint8(vals >> 1 & 1), ScreenShare: uint8(vals >> 2 & 1),
		Spotlight: uint8(vals >> 3 & 1), Presence: uint8(vals >> 4 & 3), Role: codec.Role(vals >> 6 & 7),
		Volume: uint16(vals >> 9),
	}
	var mx [8]byte
	copy(mx[:], b[5:11])
	s.MaxTS = int64(binary.LittleEndian.Uint64(mx[:]))
	at := 11
	for j, p := range s.times() {
		if mask&(1<<j) != 0 {
			*p = s.MaxTS - int64(binary.LittleEndian.Uint32(b[at:]))
			at += 4
		}
	}
	return nil
}
