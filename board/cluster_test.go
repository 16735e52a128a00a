package board_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestSlotMigrationNeverApplyHalf applies and expires boards on a Redis
// Cluster while their slots are half migrated: the rankings have moved to
// the importing master, the rest of each board has not. A script that
// built keys it had not declared ran on the old master (its first key was
// still there), failed on the first moved key after writing member totals,
// and counted them again when the batch was retried after the migration.
// Scripts must be refused whole instead, and the boards must equal the
// model afterwards: also a first-reached week board, whose scores hold
// the member states, and a windows board with two slice sets.
func TestSlotMigrationNeverApplyHalf(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := testenv.StartRedisCluster(t)
	rc := c.Client()
	ctx := context.Background()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "week", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "week",
			TZ: "Asia/Shanghai", Tie: "first-reached"},
		{Name: "trades", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Hour,
			Windows: boarddef.Lengths(2*time.Hour, 6*time.Hour)},
		// Windows with slices of their own: two slice sets in the slot.
		{Name: "trades-own", Events: []string{"trade"}, Member: "room_id", Kind: "windows", Slice: time.Hour,
			Windows: []boarddef.Window{{Length: 2 * time.Hour}, {Length: 6 * time.Hour, Slice: 3 * time.Hour}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := board.NewStore(rc, "test", bs)
	if err := st.Adopt(ctx, "g1"); err != nil {
		t.Fatal(err)
	}
	m := boardmodel.New(bs)
	now := time.Now()
	offset := int64(0)
	batch := func() *board.Batch {
		b := st.NewBatch()
		for i := range 20 {
			evs := []codec.Event{
				{RoomID: "r-1", UserID: fmt.Sprintf("u-%d", i%4), Type: codec.TypeGift, Value: int64(1 + i), TS: now.Add(-time.Duration(i) * time.Minute).UnixMilli()},
				{RoomID: fmt.Sprintf("item-%d", i%3), UserID: "u-1", Type: codec.TypeTrade, Value: int64(10 + i), TS: now.Add(-time.Duration(i*7) * time.Minute).UnixMilli()},
			}
			if err := b.Add("in", 0, offset, now, evs); err != nil {
				t.Fatal(err)
			}
			m.Record("in", 0, offset, now, evs)
			offset++
		}
		return b
	}
	if _, err := st.Apply(ctx, batch()); err != nil {
		t.Fatal(err)
	}

	// Half-migrate each board's slot: its rankings go first.
	mig := startMigrations(t, c, bs)
	for _, mg := range mig {
		mg.move(t, func(k string) bool { return strings.HasSuffix(k, ":z") || strings.Contains(k, ":z:") })
	}
	b2 := batch()
	if _, err := st.Apply(ctx, b2); err == nil {
		t.Log("apply during the migration went through")
	} else {
		t.Logf("apply during the migration refused: %v", err)
	}
	if _, err := st.Expire(ctx, now.Add(3*time.Hour)); err != nil {
		t.Logf("expire during the migration refused: %v", err)
	}
	for _, mg := range mig {
		mg.move(t, func(string) bool { return true })
		mg.finish(t)
	}
	// The batch is retried, as the processor does, then expiry runs.
	if _, err := st.Apply(ctx, b2); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{3 * time.Hour, 7 * time.Hour} {
		if _, err := st.Expire(ctx, now.Add(at)); err != nil {
			t.Fatal(err)
		}
		m.Expire(now.Add(at))
		for bi, b := range bs {
			period, windows := "", []string{""}
			if b.Kind() == boarddef.Periodic {
				period = b.Period(now).Label
			} else {
				windows = b.Windows()
			}
			for _, w := range windows {
				j, _ := b.Window(w)
				want := m.Ranking(bi, period, j)
				got, _ := topEntries(t, st, b.Name(), period, w)
				if !slices.Equal(got, want) {
					t.Fatalf("+%v %s %s%s:\n redis %v\n model %v", at, b.Name(), period, w, got, want)
				}
			}
		}
	}
}

// migration moves one slot from one master to another, key by key.
type migration struct {
	slot     int
	src, dst *redis.Client
	all      []*redis.Client
	dstID    string
	dstAddr  string
}

// startMigrations opens the migration of each board's slot to the next
// master (CLUSTER SETSLOT IMPORTING/MIGRATING).
func startMigrations(t *testing.T, c *testenv.RedisCluster, bs []*boarddef.Board) []*migration {
	ctx := context.Background()
	var nodes []*redis.Client
	var ids []string
	for i := range 3 {
		n := c.Node(i).Client()
		id, err := n.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		nodes, ids = append(nodes, n), append(ids, id)
	}
	var out []*migration
	for _, b := range bs {
		tag := b.Name()
		if b.Kind() == boarddef.Periodic { // the current period's slot (board/keys.go)
			tag += "@" + b.Period(time.Now()).Label
		}
		slot := int(c.Client().ClusterKeySlot(ctx, "rostrum:test:board:{"+tag+"}:w").Val())
		from := -1
		for i, n := range nodes {
			if keys, _ := n.ClusterGetKeysInSlot(ctx, slot, 1).Result(); len(keys) > 0 {
				from = i
			}
		}
		if from < 0 {
			t.Fatalf("board %s: no master holds slot %d", b.Name(), slot)
		}
		to := (from + 1) % 3
		mg := &migration{slot: slot, src: nodes[from], dst: nodes[to], all: nodes, dstID: ids[to], dstAddr: c.Addrs[to]}
		if err := mg.dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]).Err(); err != nil {
			t.Fatal(err)
		}
		if err := mg.src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]).Err(); err != nil {
			t.Fatal(err)
		}
		out = append(out, mg)
	}
	return out
}

// move migrates the slot's keys for which pick holds.
func (mg *migration) move(t *testing.T, pick func(string) bool) {
	ctx := context.Background()
	keys, err := mg.src.ClusterGetKeysInSlot(ctx, mg.slot, 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(mg.dstAddr)
	for _, k := range keys {
		if pick(k) {
			if err := mg.src.Migrate(ctx, host, port, k, 0, 5*time.Second).Err(); err != nil {
				t.Fatalf("migrate %s: %v", k, err)
			}
		}
	}
}

// finish assigns the slot to its new master on every master.
func (mg *migration) finish(t *testing.T) {
	for _, n := range append([]*redis.Client{mg.dst}, mg.all...) { // the new owner first
		if err := n.Do(context.Background(), "CLUSTER", "SETSLOT", mg.slot, "NODE", mg.dstID).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
