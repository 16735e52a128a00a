package board

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestKeySlot pins the hash slots of the cluster specification's examples
// and the hash tag rules: the first '{' and the first '}' after it, an
// empty tag hashing the whole key.
func TestKeySlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (the specification's check value)", got)
	}
	for _, c := range []struct{ key, tag string }{
		{"foo", "foo"},
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"{", "{"},
		{"a}b{c", "a}b{c"},
		{"rostrum:e:board:{weekly-score}:p:2026-W47:z", "weekly-score"},
	} {
		if got := hashTag(c.key); got != c.tag {
			t.Errorf("hashTag(%q) = %q, want %q", c.key, got, c.tag)
		}
		if keySlot(c.key) != keySlot(c.tag) {
			t.Errorf("keySlot(%q) differs from its tag's", c.key)
		}
	}
}

// TestKeySlotMatchesRedis compares keySlot with CLUSTER KEYSLOT of a real
// Redis Cluster for random keys made of braces and a few letters, and for
// the keys every kind of board reads.
func TestKeySlotMatchesRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	rc := testenv.StartRedisCluster(t).Client()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 9))
	alphabet := []byte("{}ab:-9é")
	var keys []string
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		keys = append(keys, sb.String())
	}
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "w", Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "week"},
		{Name: "win", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Minute,
			Windows: boarddef.Lengths(3*time.Minute, time.Hour)},
		{Name: "hot", Events: []string{"gift"}, Member: "room_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "7d"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	calls, _, err := NewStore(rc, "test", bs).planStandings([]string{"w", "win", "hot"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		keys = append(keys, c.keys...)
	}
	for _, k := range keys {
		want, err := rc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := keySlot(k); int64(got) != want {
			t.Fatalf("keySlot(%q) = %d, Redis says %d", k, got, want)
		}
	}
}

// TestPlanStandingsOneCallPerSlot: the plan of a member read has one call
// per distinct slot of the rankings' keys, every call's keys in its slot,
// and every ranking of every board read once, in order within its call.
func TestPlanStandingsOneCallPerSlot(t *testing.T) {
	var cfgs []boarddef.Config
	var names []string
	for i := range 40 {
		name := fmt.Sprintf("b%d", i)
		c := boarddef.Config{Name: name, Events: []string{"score"}, Member: "user_id", Kind: "periodic", Period: "day"}
		switch i % 3 {
		case 1:
			c = boarddef.Config{Name: name, Events: []string{"trade"}, Member: "user_id", Kind: "windows", Slice: time.Minute,
				Windows: boarddef.Lengths(3*time.Minute, 10*time.Minute, time.Hour)}
		case 2:
			c = boarddef.Config{Name: name, Events: []string{"gift"}, Member: "user_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "1d"}}
		}
		cfgs, names = append(cfgs, c), append(names, name)
	}
	bs, err := boarddef.Compile(cfgs)
	if err != nil {
		t.Fatal(err)
	}
	calls, tmpl, err := NewStore(nil, "test", bs).planStandings(names)
	if err != nil {
		t.Fatal(err)
	}
	slots := map[int]bool{}
	rankings := 0
	for _, c := range calls {
		slot := keySlot(c.keys[0])
		if slots[slot] {
			t.Fatalf("slot %d has two calls", slot)
		}
		slots[slot] = true
		n := 0
		for i, r := range c.reads {
			if k := c.counts[i]; k != 2+btoi(r.t.base != "") {
				t.Fatalf("%s: %d keys counted", r.t.b.Name(), k)
			}
			n += c.counts[i]
			rankings++
		}
		if n != len(c.keys) {
			t.Fatalf("call of slot %d: counts sum to %d, %d keys", slot, n, len(c.keys))
		}
		for _, k := range c.keys {
			if keySlot(k) != slot {
				t.Fatalf("call of slot %d holds %s of slot %d", slot, k, keySlot(k))
			}
		}
	}
	want := 0
	for i, b := range tmpl {
		want += len(b.Standings)
		if b.Board != names[i] {
			t.Fatalf("standing %d is of %s, want %s", i, b.Board, names[i])
		}
	}
	if rankings != want || want != 14*1+13*3+13*1 {
		t.Fatalf("%d rankings planned, %d in the template", rankings, want)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
