package codec

import (
	"fmt"
	"time"
)

// DefaultEpoch is the epoch of rostrum's meeting scores unless configured
// otherwise. Its score window ends 2^38 ms (about 8.7 years) later, in
// September 2033. It is a preset: do not assign to it.
var DefaultEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Meeting preset limits (docs/DESIGN.md §4).
const (
	// MaxVolume is the loudest volume; the volume field has 10 bits, but
	// 1000..1023 are refused so that every score stays meaningful.
	MaxVolume = 999
	// MeetingTimeBits is the width of the meeting time field: what remains
	// of MaxBits after audio (1), volume (10), video (1) and role (3).
	MeetingTimeBits = MaxBits - 1 - 10 - 1 - 3
	// MeetingWindow is how long after its epoch a Meeting can encode event
	// times: 2^38 ms, about 8.7 years.
	MeetingWindow = (1 << MeetingTimeBits) * time.Millisecond
)

// meetingLayout is the meeting score, most significant field first:
//
//	audio:1 volume:10 video:1 role:3 time:38 (53 bits)
var meetingLayout = MustLayout(
	Field{Name: "audio", Bits: 1},
	Field{Name: "volume", Bits: 10},
	Field{Name: "video", Bits: 1},
	Field{Name: "role", Bits: 3},
	Field{Name: "time", Bits: MeetingTimeBits},
)

// MemberScore is what a meeting score holds about one member.
type MemberScore struct {
	Audio  uint8  // 0 off, 1 on
	Volume uint16 // 0..MaxVolume
	Video  uint8  // 0 off, 1 on
	Role   Role   // a ranked role, RoleStudent..RoleHost
	TS     int64  // newest event time applied to the member, Unix milliseconds
}

// Meeting encodes the scores of the live meeting ranking (docs/DESIGN.md §4): audio
// on first, then louder, then video on, then the higher role, then the newer
// event time. The time field counts milliseconds since the epoch in 38 bits,
// so a Meeting covers event times in [epoch, epoch+MeetingWindow), about 8.7
// years; an event time outside that window is an error, never a wrap-around.
// Changing the epoch changes every score: every room's ranking has to be
// rebuilt (replaying the WAL does it) when it changes.
//
// A Meeting is immutable and safe for concurrent use.
type Meeting struct {
	epoch   time.Time
	epochMS int64
}

// NewMeeting returns the meeting codec for epoch, truncated to the
// millisecond. The zero time means DefaultEpoch.
func NewMeeting(epoch time.Time) *Meeting {
	if epoch.IsZero() {
		epoch = DefaultEpoch
	}
	epoch = epoch.Truncate(time.Millisecond)
	return &Meeting{epoch: epoch, epochMS: epoch.UnixMilli()}
}

// Layout returns the meeting score layout,
// "audio:1 volume:10 video:1 role:3 time:38 (53 bits)".
func (m *Meeting) Layout() *Layout { return meetingLayout }

// Epoch returns the time that the time field counts from.
func (m *Meeting) Epoch() time.Time { return m.epoch }

// Encode returns the score of s. It returns a *RangeError when Audio or
// Video is above 1, when Volume is above MaxVolume, or when TS is at or past
// the end of the score window; and an error when Role is not ranked (members
// with an excluded role are removed from the ranking, not scored) or TS is
// before the epoch. Encode does not allocate unless it fails.
func (m *Meeting) Encode(s MemberScore) (float64, error) {
	switch {
	case s.Audio > 1:
		return 0, &RangeError{Field: "audio", Value: uint64(s.Audio), Max: 1}
	case s.Volume > MaxVolume:
		return 0, &RangeError{Field: "volume", Value: uint64(s.Volume), Max: MaxVolume}
	case s.Video > 1:
		return 0, &RangeError{Field: "video", Value: uint64(s.Video), Max: 1}
	case !s.Role.Ranked():
		return 0, fmt.Errorf("codec: role %s (%d) is not ranked; only roles %d..%d have a score",
			s.Role, s.Role, RoleStudent, RoleHost)
	case s.TS < m.epochMS:
		return 0, fmt.Errorf("codec: event time %d ms is before the score epoch %s",
			s.TS, m.epoch.Format(time.RFC3339Nano))
	}
	// Volume, role and TS are checked above; the layout checks the time.
	return meetingLayout.Encode(uint64(s.Audio), uint64(s.Volume), uint64(s.Video),
		uint64(s.Role), uint64(s.TS-m.epochMS))
}

// Decode returns the member score held in score. It returns an error when
// score is not a meeting score: not an integer in [0, 2^53), a volume above
// MaxVolume, or a role that is not ranked.
func (m *Meeting) Decode(score float64) (MemberScore, error) {
	l := meetingLayout
	x, err := l.bitsOf(score)
	if err != nil {
		return MemberScore{}, err
	}
	s := MemberScore{
		Audio:  uint8(l.field(x, 0)),
		Volume: uint16(l.field(x, 1)),
		Video:  uint8(l.field(x, 2)),
		Role:   Role(l.field(x, 3)),
		TS:     m.epochMS + int64(l.field(x, 4)),
	}
	switch {
	case s.Volume > MaxVolume:
		return MemberScore{}, fmt.Errorf("codec: decode meeting score %v: volume %d above %d", score, s.Volume, MaxVolume)
	case !s.Role.Ranked():
		return MemberScore{}, fmt.Errorf("codec: decode meeting score %v: role %d is not ranked", score, s.Role)
	}
	return s, nil
}
