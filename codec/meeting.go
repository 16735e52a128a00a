package codec

import (
	"fmt"
	"time"
)

// DefaultEpoch is the epoch of rostrum's meeting scores unless configured
// otherwise. Its score window ends 2^38 ms (about 8.7 years) later, in
// September 2033. It is a preset: do not assign to it.
var DefaultEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Meeting limits (docs/DESIGN.md §4).
const (
	// MaxVolume is the loudest volume; the volume field has 10 bits, but
	// 1000..1023 are refused so that every score stays meaningful.
	MaxVolume = 999
	// meetingWindowBits is the width of the score window in milliseconds:
	// whatever the rules, a meeting encodes 2^38 ms after its epoch.
	meetingWindowBits = 38
	// MeetingWindow is how long after its epoch a Meeting can encode event
	// times: 2^38 ms, about 8.7 years, under every ranking rule set.
	MeetingWindow = (1 << meetingWindowBits) * time.Millisecond
)

// MemberScore is what a meeting score holds about one member. A field the
// rules leave out is not in the score: Decode returns it as 0.
type MemberScore struct {
	Spotlight   uint8  // 0 off, 1 on
	ScreenShare uint8  // 0 off, 1 sharing
	Audio       uint8  // 0 off, 1 on
	Volume      uint16 // 0..MaxVolume
	Video       uint8  // 0 off, 1 on
	Role        Role   // a ranked role, RoleStudent..RoleHost
	TS          int64  // newest event time applied to the member, Unix milliseconds
}

// value returns the value of rule field f in s.
func (s *MemberScore) value(f RuleField) uint64 {
	switch f {
	case RuleSpotlight:
		return uint64(s.Spotlight)
	case RuleScreenShare:
		return uint64(s.ScreenShare)
	case RuleAudio:
		return uint64(s.Audio)
	case RuleVolume:
		return uint64(s.Volume)
	case RuleVideo:
		return uint64(s.Video)
	}
	return uint64(s.Role)
}

// set stores v as the value of rule field f in s.
func (s *MemberScore) set(f RuleField, v uint64) {
	switch f {
	case RuleSpotlight:
		s.Spotlight = uint8(v)
	case RuleScreenShare:
		s.ScreenShare = uint8(v)
	case RuleAudio:
		s.Audio = uint8(v)
	case RuleVolume:
		s.Volume = uint16(v)
	case RuleVideo:
		s.Video = uint8(v)
	case RuleRole:
		s.Role = Role(v)
	}
}

// Meeting encodes the scores of the live meeting ranking (docs/DESIGN.md
// §4, §10): the fields of its Rules, most significant first, then the
// member's newest event time. The rules take at most 17 bits; the time field
// takes the rest of the 53 bits, at most 38, in a unit of 1, 2 or 4 ms chosen
// so that every rule set covers the same window of 2^38 ms (about 8.7 years)
// after the epoch:
//
//	rules bits   time bits   time unit
//	0..15        38          1 ms   (the legacy rules: audio, volume, video, role)
//	16           37          2 ms
//	17           36          4 ms   (the default rules)
//
// An event time outside the window is an error, never a wrap-around.
// Changing the rules or the epoch changes the scores: each room records the
// Version it was scored under and is re-scored from its member registers
// when a processor with other rules touches it (docs/DESIGN.md §10).
//
// A Meeting is immutable and safe for concurrent use.
type Meeting struct {
	epoch   time.Time
	epochMS int64
	rules   Rules
	layout  *Layout
	unitMS  int64
	version string
	has     uint8 // bit f set when the rules hold RuleField f
}

// NewMeeting returns the meeting codec of the default rules for epoch,
// truncated to the millisecond. The zero time means DefaultEpoch.
func NewMeeting(epoch time.Time) *Meeting {
	m, err := NewMeetingRules(epoch, DefaultRules())
	if err != nil {
		panic(err)
	}
	return m
}

// NewMeetingRules returns the meeting codec of rules for epoch (the zero
// time means DefaultEpoch). It returns an error when rules repeat a field or
// hold one that is not a RuleField.
func NewMeetingRules(epoch time.Time, rules Rules) (*Meeting, error) {
	if epoch.IsZero() {
		epoch = DefaultEpoch
	}
	epoch = epoch.Truncate(time.Millisecond)
	fields := make([]Field, 0, len(rules)+1)
	for i, f := range rules {
		if _, ok := parseRuleField(f.String()); !ok {
			return nil, fmt.Errorf("codec: ranking rules: %v is not a rule field", f)
		}
		if rules[:i].Has(f) {
			return nil, fmt.Errorf("codec: ranking rules: field %s is listed twice", f)
		}
		fields = append(fields, Field{Name: f.String(), Bits: f.Bits()})
	}
	timeBits := min(meetingWindowBits, MaxBits-rules.Bits())
	fields = append(fields, Field{Name: "time", Bits: uint8(timeBits)})
	l, err := NewLayout(fields...)
	if err != nil {
		return nil, err
	}
	m := &Meeting{epoch: epoch, epochMS: epoch.UnixMilli(), rules: append(Rules(nil), rules...), layout: l,
		unitMS: 1 << (meetingWindowBits - timeBits)}
	m.version = rulesVersion(m.rules, m.unitMS, m.epochMS)
	for _, f := range rules {
		m.has |= 1 << f
	}
	return m, nil
}

// Layout returns the score layout, for example
// "spotlight:1 screen_share:1 audio:1 volume:10 video:1 role:3 time:36 (53 bits)".
func (m *Meeting) Layout() *Layout { return m.layout }

// Rules returns the ranking rules, most significant first.
func (m *Meeting) Rules() Rules { return append(Rules(nil), m.rules...) }

// Has reports whether the score holds rule field f.
func (m *Meeting) Has(f RuleField) bool { return m.has&(1<<f) != 0 }

// TimeUnit returns the unit of the time field: 1, 2 or 4 ms.
func (m *Meeting) TimeUnit() time.Duration { return time.Duration(m.unitMS) * time.Millisecond }

// Version names the scores m gives: two meetings with the same rules, time
// unit and epoch have the same Version. Rooms store it (8 hex digits).
func (m *Meeting) Version() string { return m.version }

// Multiplier returns the score of one step of rule field f (2^shift), or
// 0 when the rules leave f out.
func (m *Meeting) Multiplier(f RuleField) uint64 {
	for i, g := range m.rules {
		if g == f {
			return 1 << m.layout.fields[i].Shift
		}
	}
	return 0
}

// Epoch returns the time that the time field counts from.
func (m *Meeting) Epoch() time.Time { return m.epoch }

// Encode returns the score of s. It returns a *RangeError when a 0/1 field is
// above 1, when Volume is above MaxVolume, or when TS is at or past the end
// of the score window; and an error when Role is not ranked (members with an
// excluded role are removed from the ranking, not scored) or TS is before the
// epoch. Every field is checked, ranked on or not. Encode does not allocate
// unless it fails.
func (m *Meeting) Encode(s MemberScore) (float64, error) {
	switch {
	case s.Spotlight > 1:
		return 0, &RangeError{Field: "spotlight", Value: uint64(s.Spotlight), Max: 1}
	case s.ScreenShare > 1:
		return 0, &RangeError{Field: "screen_share", Value: uint64(s.ScreenShare), Max: 1}
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
	case s.TS-m.epochMS >= 1<<meetingWindowBits:
		return 0, &RangeError{Field: "time", Value: uint64(s.TS - m.epochMS), Max: 1<<meetingWindowBits - 1}
	}
	var x uint64
	for i, f := range m.rules {
		x |= s.value(f) << m.layout.fields[i].Shift
	}
	x |= uint64(s.TS-m.epochMS) / uint64(m.unitMS)
	// x < 2^53, so the conversion is exact.
	return float64(x), nil
}

// CheckTime returns the error Encode gives for an event time ts (Unix ms)
// outside the score window: before the epoch, or at or past its end; nil
// for a time the score holds. The processor refuses a meeting event whose
// time fails it.
func (m *Meeting) CheckTime(ts int64) error {
	_, err := m.Encode(MemberScore{Role: RoleStudent, TS: ts})
	return err
}

// Decode returns the member score held in score: the fields of the rules,
// and TS rounded down to the time unit; fields the rules leave out are 0.
// It returns an error when score is not a meeting score: not an integer in
// [0, 2^53), a volume above MaxVolume, or a role that is not ranked.
func (m *Meeting) Decode(score float64) (MemberScore, error) {
	l := m.layout
	x, err := l.bitsOf(score)
	if err != nil {
		return MemberScore{}, err
	}
	var s MemberScore
	for i, f := range m.rules {
		s.set(f, l.field(x, i))
	}
	s.TS = m.epochMS + int64(l.field(x, len(m.rules)))*m.unitMS
	switch {
	case s.Volume > MaxVolume:
		return MemberScore{}, fmt.Errorf("codec: decode meeting score %v: volume %d above %d", score, s.Volume, MaxVolume)
	case m.Has(RuleRole) && !s.Role.Ranked():
		return MemberScore{}, fmt.Errorf("codec: decode meeting score %v: role %d is not ranked", score, s.Role)
	}
	return s, nil
}
