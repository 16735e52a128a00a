package codec

import "testing"

var (
	benchScore  float64
	benchVals   []uint64
	benchMember MemberScore
)

func BenchmarkLayoutEncode(b *testing.B) {
	l := MustLayout(
		Field{Name: "audio", Bits: 1},
		Field{Name: "volume", Bits: 10},
		Field{Name: "video", Bits: 1},
		Field{Name: "role", Bits: 3},
		Field{Name: "reached", Bits: 38, Dir: LowerFirst},
	)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s, err := l.Encode(1, uint64(i)&511, 1, 4, uint64(i))
		if err != nil {
			b.Fatal(err)
		}
		benchScore = s
	}
}

func BenchmarkLayoutDecode(b *testing.B) {
	l := MustLayout(
		Field{Name: "audio", Bits: 1},
		Field{Name: "volume", Bits: 10},
		Field{Name: "video", Bits: 1},
		Field{Name: "role", Bits: 3},
		Field{Name: "reached", Bits: 38, Dir: LowerFirst},
	)
	s, err := l.Encode(1, 512, 1, 4, 123456789)
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]uint64, 0, 5)
	b.ReportAllocs()
	for b.Loop() {
		dst, err = l.Decode(s, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	benchVals = dst
}

func BenchmarkMeetingEncode(b *testing.B) {
	m := NewMeeting(DefaultEpoch)
	s := MemberScore{Audio: 1, Volume: 512, Video: 1, Role: RoleHost, TS: DefaultEpoch.UnixMilli() + 1e10}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.TS += int64(i & 1)
		score, err := m.Encode(s)
		if err != nil {
			b.Fatal(err)
		}
		benchScore = score
	}
}

func BenchmarkMeetingDecode(b *testing.B) {
	m := NewMeeting(DefaultEpoch)
	score, err := m.Encode(MemberScore{Audio: 1, Volume: 512, Video: 1, Role: RoleHost, TS: DefaultEpoch.UnixMilli() + 1e10})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		benchMember, err = m.Decode(score)
		if err != nil {
			b.Fatal(err)
		}
	}
}
