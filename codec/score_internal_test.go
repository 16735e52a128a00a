package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// appendScore writes every float64 as AppendFloat's shortest 'f' form does:
// whole numbers on the fast path (edges of 2^53 and of 1 included), and
// fractions, negatives, zeros, huge values and NaN on the slow one.
func TestAppendScoreMatchesAppendFloat(t *testing.T) {
	check := func(s float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, s, 'f', -1, 64)
		if got := appendScore(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendScore(%v) = %s, want %s", s, got, want)
		}
	}
	for _, s := range []float64{0, math.Copysign(0, -1), 0.5, 1, 2, -1, 1 << 52, 1<<53 - 1, 1 << 53, 1<<53 + 2,
		1e21, 1e300, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Inf(1), math.Inf(-1), math.NaN(),
		123456789, 123456789.5} {
		check(s)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 200_000 {
		check(float64(rng.Int64N(1 << 53)))
		check(math.Float64frombits(rng.Uint64()))
		check(rng.Float64() * 1e16)
	}
}

func BenchmarkAppendScore(b *testing.B) {
	m := NewMeeting(DefaultEpoch)
	s, err := m.Encode(MemberScore{Audio: 1, Volume: 512, Video: 1, Role: RoleHost, TS: DefaultEpoch.UnixMilli() + 5000})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.Run("AppendFloat", func(b *testing.B) {
		for b.Loop() {
			buf = strconv.AppendFloat(buf[:0], s, 'f', -1, 64)
		}
	})
	b.Run("appendScore", func(b *testing.B) {
		for b.Loop() {
			buf = appendScore(buf[:0], s)
		}
	})
}
