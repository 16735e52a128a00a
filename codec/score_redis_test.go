package codec

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// scored is one sorted-set member with the score the codec gave it and the
// tuple it encodes.
type scored struct {
	member string
	score  float64
	tuple  []uint64
}

// encodeAll encodes tuples with l, skipping duplicate tuples (Redis orders
// equal scores by member name, which is not what these tests check).
func encodeAll(t *testing.T, l *Layout, tuples [][]uint64) []scored {
	t.Helper()
	seen := map[float64]bool{}
	var out []scored
	for _, tu := range tuples {
		s, err := l.Encode(tu...)
		if err != nil {
			t.Fatalf("%s: Encode(%v): %v", l, tu, err)
		}
		if seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, scored{member: "m" + strconv.Itoa(len(out)), score: s, tuple: tu})
	}
	return out
}

// checkRedisRoundTrip writes entries with ZADD, then requires ZSCORE and
// ZREVRANGE WITHSCORES to give back every score bit for bit, and ZREVRANGE to
// list the members in the order of their tuples, best first.
func checkRedisRoundTrip(t *testing.T, c *redis.Client, key string, l *Layout, entries []scored) {
	t.Helper()
	ctx := context.Background()
	for chunk := range slices.Chunk(entries, 1000) {
		if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, e := range chunk {
				p.ZAdd(ctx, key, redis.Z{Score: e.score, Member: e.member})
			}
			return nil
		}); err != nil {
			t.Fatalf("ZADD: %v", err)
		}
	}
	cmds := make([]*redis.FloatCmd, len(entries))
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range entries {
			cmds[i] = p.ZScore(ctx, key, e.member)
		}
		return nil
	}); err != nil {
		t.Fatalf("ZSCORE: %v", err)
	}
	for i, e := range entries {
		if got := cmds[i].Val(); math.Float64bits(got) != math.Float64bits(e.score) {
			t.Fatalf("ZSCORE %s = %v (bits %#x), wrote %v (bits %#x) for %v",
				e.member, got, math.Float64bits(got), e.score, math.Float64bits(e.score), e.tuple)
		}
	}

	fields := l.Fields()
	want := slices.Clone(entries)
	slices.SortFunc(want, func(a, b scored) int { return compareTuples(fields, b.tuple, a.tuple) })
	got, err := c.ZRevRangeWithScores(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZREVRANGE: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("ZREVRANGE returned %d members, wrote %d", len(got), len(want))
	}
	for i, z := range got {
		w := want[i]
		if z.Member != w.member || math.Float64bits(z.Score) != math.Float64bits(w.score) {
			t.Fatalf("ZREVRANGE rank %d = %v %v, want %s %v (tuple %v)", i, z.Member, z.Score, w.member, w.score, w.tuple)
		}
		dec, err := l.Decode(z.Score, nil)
		if err != nil || compareTuples(fields, dec, w.tuple) != 0 {
			t.Fatalf("Decode(%v) from Redis = %v, %v; want %v", z.Score, dec, err, w.tuple)
		}
	}
}

func TestScoresSurviveRedis(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	rnd := rand.New(rand.NewPCG(53, 53))

	t.Run("near 2^53", func(t *testing.T) {
		l := MustLayout(Field{Name: "n", Bits: 53})
		var tuples [][]uint64
		for _, v := range []uint64{
			1<<53 - 1, 1<<53 - 2, 1<<53 - 3, 1<<53 - 4, 1<<53 - 1000,
			1<<52 + 1, 1 << 52, 1<<52 - 1, 1<<32 + 1, 1 << 32, 3, 2, 1, 0,
		} {
			tuples = append(tuples, []uint64{v})
		}
		for range 500 {
			tuples = append(tuples, []uint64{1<<53 - 1 - rnd.Uint64N(1<<20)})
		}
		checkRedisRoundTrip(t, c, "codec:near53", l, encodeAll(t, l, tuples))
	})

	t.Run("meeting", func(t *testing.T) {
		m := legacyMeeting(DefaultEpoch)
		epoch := DefaultEpoch.UnixMilli()
		members := []MemberScore{
			{Audio: 1, Volume: 999, Video: 1, Role: RoleHost, TS: epoch + 1<<38 - 1}, // the largest score
			{Audio: 1, Volume: 999, Video: 1, Role: RoleHost, TS: epoch + 1<<38 - 2},
			{Audio: 1, Volume: 999, Video: 1, Role: RoleHost, TS: epoch + 1<<38 - 3},
			{Audio: 1, Volume: 999, Video: 1, Role: RoleCohost, TS: epoch + 1<<38 - 1},
			{Audio: 0, Volume: 0, Video: 0, Role: RoleStudent, TS: epoch},
			{Audio: 0, Volume: 0, Video: 0, Role: RoleStudent, TS: epoch + 1},
		}
		// Many members one millisecond or one volume step apart, as in a
		// busy meeting, plus random ones over the whole window.
		now := time.Date(2025, 11, 21, 12, 30, 15, 123e6, time.UTC).UnixMilli()
		for i := range 2000 {
			if i%2 == 0 {
				members = append(members, MemberScore{
					Audio: 1, Volume: uint16(500 + rnd.IntN(3)), Video: uint8(rnd.IntN(2)),
					Role: RoleStudent + Role(rnd.IntN(4)), TS: now + int64(rnd.IntN(50)),
				})
				continue
			}
			members = append(members, randomMember(rnd, epoch))
		}
		var tuples [][]uint64
		for _, s := range members {
			score, err := m.Encode(s)
			if err != nil {
				t.Fatalf("Encode(%+v): %v", s, err)
			}
			tu, err := m.Layout().Decode(score, nil)
			if err != nil {
				t.Fatal(err)
			}
			tuples = append(tuples, tu)
		}
		entries := encodeAll(t, m.Layout(), tuples)
		if len(entries) < 1000 {
			t.Fatalf("only %d distinct members", len(entries))
		}
		checkRedisRoundTrip(t, c, "codec:meeting", m.Layout(), entries)
		// The decoded Redis scores are the members written.
		for _, e := range entries {
			s, err := m.Decode(e.score)
			if err != nil {
				t.Fatal(err)
			}
			if back, _ := m.Encode(s); back != e.score {
				t.Fatalf("member %+v re-encodes to %v, want %v", s, back, e.score)
			}
		}
	})

	t.Run("first reached", func(t *testing.T) {
		l, err := NewFirstReached(23)
		if err != nil {
			t.Fatal(err)
		}
		var tuples [][]uint64
		for range 2000 {
			// Few distinct totals, so that the reached time decides often.
			total := []uint64{0, 1, 5_000_000, 1<<23 - 1}[rnd.IntN(4)]
			reached := []uint64{0, 1, 2, 1<<30 - 2, 1<<30 - 1, rnd.Uint64N(1 << 30)}[rnd.IntN(6)]
			tuples = append(tuples, []uint64{total, reached})
		}
		checkRedisRoundTrip(t, c, "codec:first-reached", l, encodeAll(t, l, tuples))
	})
}

// seed003Score builds seed 003's 19-digit decimal score
// [audio 1][volume 3][video 1][role 1][ms timestamp 13]; audio and video are
// 1 off, 2 on there.
func seed003Score(audio, volume, video, role, ts uint64) uint64 {
	return audio*1e18 + volume*1e15 + video*1e14 + role*1e13 + ts
}

// seed001Score builds seed 001's 64-bit score: 23 bits of points above 40
// bits of "milliseconds until a fixed end date", so that earlier ranks
// higher.
func seed001Score(points, untilEndMS uint64) uint64 {
	return (points&(1<<23-1))<<40 | untilEndMS&(1<<40-1)
}

// TestSeedLayoutsCollapseInRedis shows why the codec stays within 53 bits:
// the layouts of seeds 003 and 001 give distinct members distinct integers,
// but Redis stores them as one double, so their order is lost. The codec's
// scores for the same members stay distinct and in order.
func TestSeedLayoutsCollapseInRedis(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t)
	c := r.Client()
	// A RESP2 client gets scores back as the strings Redis formats.
	c2 := redis.NewClient(&redis.Options{Addr: r.Addr, Protocol: 2})
	t.Cleanup(func() { _ = c2.Close() })

	now := time.Date(2025, 11, 21, 20, 30, 15, 123e6, time.FixedZone("CST", 8*3600))
	nowMS := uint64(now.UnixMilli())
	seedEnd := time.Date(2054, 9, 7, 0, 0, 0, 0, now.Location()) // seed 001: fixed start 2020-09-07 + 34 years
	untilEnd := uint64(seedEnd.UnixMilli()) - nowMS
	weekStart := time.Date(2025, 11, 17, 0, 0, 0, 0, now.Location()) // the Monday of now's week
	sinceWeek := nowMS - uint64(weekStart.UnixMilli())

	meeting := legacyMeeting(DefaultEpoch)
	meeting2005 := legacyMeeting(time.Date(2005, 1, 1, 0, 0, 0, 0, time.UTC))
	firstReached, err := NewFirstReached(23)
	if err != nil {
		t.Fatal(err)
	}
	encMeeting := func(m *Meeting, s MemberScore) float64 {
		t.Helper()
		f, err := m.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	encReached := func(total, reached uint64) float64 {
		t.Helper()
		f, err := firstReached.Encode(total, reached)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	tests := []struct {
		name string
		// The seed's integers for the better member a and the worse member b.
		seedA, seedB uint64
		// The codec's scores for the same two members.
		oursA, oursB float64
	}{
		{
			// The seed's own example: host, audio on, volume 100, video off,
			// at 1111111111111, and the same member one millisecond later.
			name:  "seed 003 example",
			seedA: seed003Score(2, 100, 1, 4, 1111111111112),
			seedB: seed003Score(2, 100, 1, 4, 1111111111111),
			oursA: encMeeting(meeting2005, MemberScore{Audio: 1, Volume: 100, Video: 0, Role: RoleHost, TS: 1111111111112}),
			oursB: encMeeting(meeting2005, MemberScore{Audio: 1, Volume: 100, Video: 0, Role: RoleHost, TS: 1111111111111}),
		},
		{
			name:  "seed 003 today",
			seedA: seed003Score(2, 100, 1, 4, nowMS+1),
			seedB: seed003Score(2, 100, 1, 4, nowMS),
			oursA: encMeeting(meeting, MemberScore{Audio: 1, Volume: 100, Video: 0, Role: RoleHost, TS: int64(nowMS) + 1}),
			oursB: encMeeting(meeting, MemberScore{Audio: 1, Volume: 100, Video: 0, Role: RoleHost, TS: int64(nowMS)}),
		},
		{
			// 500,000.0 points (the seed stores points times ten), reached
			// now by a and one millisecond later by b.
			name:  "seed 001",
			seedA: seed001Score(5_000_000, untilEnd),
			seedB: seed001Score(5_000_000, untilEnd-1),
			oursA: encReached(5_000_000, sinceWeek),
			oursB: encReached(5_000_000, sinceWeek+1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "codec:seed:" + tt.name
			if tt.seedA <= tt.seedB {
				t.Fatalf("seed scores %d and %d are not in rank order", tt.seedA, tt.seedB)
			}
			a, b := strconv.FormatUint(tt.seedA, 10), strconv.FormatUint(tt.seedB, 10)
			// Send the exact decimal integers, as the seeds' clients would.
			if err := c.Do(ctx, "ZADD", key, a, "seed-a", b, "seed-b").Err(); err != nil {
				t.Fatalf("ZADD: %v", err)
			}
			fa, err := c.ZScore(ctx, key, "seed-a").Result()
			if err != nil {
				t.Fatal(err)
			}
			fb, err := c.ZScore(ctx, key, "seed-b").Result()
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(fa) != math.Float64bits(fb) {
				t.Fatalf("Redis kept %s and %s apart (%v, %v); the seed layout was expected to collapse", a, b, fa, fb)
			}
			sa, err := c2.Do(ctx, "ZSCORE", key, "seed-a").Text()
			if err != nil {
				t.Fatal(err)
			}
			sb, err := c2.Do(ctx, "ZSCORE", key, "seed-b").Text()
			if err != nil {
				t.Fatal(err)
			}
			if sa != sb {
				t.Fatalf("ZSCORE strings %q and %q differ", sa, sb)
			}
			if f, err := strconv.ParseFloat(sa, 64); err != nil || math.Float64bits(f) != math.Float64bits(fa) {
				t.Fatalf("RESP2 score %q and RESP3 score %v differ", sa, fa)
			}
			t.Logf("seed layout: %s and %s are both stored as %s", a, b, sb)

			// The codec: distinct, exact, in order.
			if err := c.ZAdd(ctx, key, redis.Z{Score: tt.oursA, Member: "ours-a"}, redis.Z{Score: tt.oursB, Member: "ours-b"}).Err(); err != nil {
				t.Fatalf("ZADD: %v", err)
			}
			ga, _ := c.ZScore(ctx, key, "ours-a").Result()
			gb, _ := c.ZScore(ctx, key, "ours-b").Result()
			if math.Float64bits(ga) != math.Float64bits(tt.oursA) || math.Float64bits(gb) != math.Float64bits(tt.oursB) {
				t.Fatalf("codec scores came back as %v, %v; wrote %v, %v", ga, gb, tt.oursA, tt.oursB)
			}
			if !(ga > gb) {
				t.Fatalf("codec scores %v, %v: the better member does not rank higher", ga, gb)
			}
			rank, err := c.ZRevRank(ctx, key, "ours-a").Result()
			if err != nil {
				t.Fatal(err)
			}
			rankB, err := c.ZRevRank(ctx, key, "ours-b").Result()
			if err != nil {
				t.Fatal(err)
			}
			if rank >= rankB {
				t.Fatalf("ZREVRANK ours-a = %d, ours-b = %d; want a above b", rank, rankB)
			}
		})
	}
}
