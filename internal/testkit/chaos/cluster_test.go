package chaos

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// TestClusterSlotMigration runs the unchanged pipeline, leaderboards
// included, against a three-master Redis Cluster and, while the processor
// writes, migrates to another master key by key (CLUSTER SETSLOT
// IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE) the slots of five busy rooms
// and of three boards (a rolling or windows board's keys share its hash
// tag, so one slot holds all of it; the weekly board's periods each have a
// tag of their own, and each of their slots moves too). Meanwhile the scripts meet ASK redirections and
// TRYAGAIN (a script whose keys are split between the two masters), which
// the batch retries absorb. At the end the meeting state and every board
// must equal the models: nothing lost, nothing applied twice.
func TestClusterSlotMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	cluster := testenv.StartRedisCluster(t)
	cfg := trace.DefaultConfig(7)
	cfg.Records = 20000
	tr, _ := Trace(cfg, &trace.BoardConfig{Seed: 7, Records: 5000, Now: time.Now().UnixMilli(),
		ArrayRate: 0.3, IDRate: 0.35, RetryRate: 0.05, LateRate: 0.02, DecimalRate: 0.3,
		Cheaters: 4, CheatRate: 0.02, RemoveRate: 0.005, RemoveBoards: CheaterBoards})
	boards, err := Boards()
	if err != nil {
		t.Fatal(err)
	}
	boards, _ = SplitDecay(boards) // the decay boards are checked by TestChaos alone
	h := New(t, cluster.Addrs, tr, boards, processor.StabilityHysteresis)
	rc := cluster.Client()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store, err := sink.New(rc, SinkOptions())
	if err != nil {
		t.Fatal(err)
	}
	walDir := t.TempDir()
	log, err := wal.Open(walDir, wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	pcfg := ProcessorConfig(h.Kafka.Seeds, walDir, zaptest.NewLogger(t), processor.StabilityHysteresis)
	pcfg.Retry.Backoff = 20 * time.Millisecond
	pcfg.Boards, pcfg.BoardStore = boards, board.NewStore(rc, EnvName, boards)
	p, err := processor.New(ctx, pcfg, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	produced := h.Produce(0, len(tr), 8*time.Second)

	for p.Stats().Records.Load() < int64(len(h.In.Trace))/4 {
		time.Sleep(20 * time.Millisecond)
	}
	m := newMigrator(t, cluster)
	moved := 0
	// The board events are all in the trace's second half: wait for them.
	for p.Stats().BoardEvents.Load() == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	// The boards' slots, and the slots of the weekly board's periods (one
	// hash tag per period: board/keys.go), from its registry.
	tags := []string{"weekly-score", "room-gifts-7d", "item-trades"}
	for _, m := range rc.ZRange(ctx, "rostrum:"+EnvName+":{rostrum:"+EnvName+":generation}:board-periods", 0, -1).Val() {
		if strings.HasPrefix(m, "weekly-score@") {
			tags = append(tags, m)
		}
	}
	if len(tags) == 3 {
		t.Fatal("the weekly board registered no period")
	}
	migrated := map[int]bool{}
	for _, tag := range tags {
		key := "rostrum:" + EnvName + ":board:{" + tag + "}:w"
		slot := int(rc.ClusterKeySlot(ctx, key).Val())
		if migrated[slot] {
			continue
		}
		migrated[slot] = true
		from := m.owner(ctx, slot)
		to := (from + 1) % 3
		moved += m.migrate(ctx, slot, from, to)
		t.Logf("board %s: slot %d moved from master %d to %d", tag, slot, from, to)
	}
	for i := range 5 {
		room := fmt.Sprintf("r-%d", i)
		slot := int(rc.ClusterKeySlot(ctx, sink.RoomKeys(EnvName, room).Members).Val())
		from := m.owner(ctx, slot)
		to := (from + 1) % 3
		moved += m.migrate(ctx, slot, from, to)
		t.Logf("room %s: slot %d moved from master %d to %d", room, slot, from, to)
	}
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	h.WaitCaughtUp(3 * time.Minute)
	h.WaitSettled(rc, time.Minute)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rep, err := Check(context.Background(), rc, h.Kafka.ReadAll(h.Topics.TopN), h.Kafka.ReadAll(h.Topics.DLQ), nil, h.Inputs(), h.In)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d keys migrated; batches %d, retries %d; outputs %d; board records %d (%d late), %d board members compared; lost %d, applied twice %d",
		moved, p.Stats().Batches.Load(), p.Stats().Retries.Load(), rep.Outputs, rep.BoardRecords, rep.BoardLate, rep.BoardEntries, rep.Lost, rep.AppliedTwice)
	if !rep.OK() {
		for _, pr := range rep.Problems {
			t.Error(pr)
		}
		t.Fatalf("lost %d, applied twice %d, moved %d, mismatched %d", rep.Lost, rep.AppliedTwice, rep.Moved, rep.Mismatch)
	}
}

// migrator moves slots between the masters of a test cluster by hand, the
// way redis-cli --cluster reshard does, but slowly enough (one key at a
// time) that writers see the slot half-migrated.
type migrator struct {
	t     *testing.T
	nodes []*redis.Client
	ids   []string
	addrs []string
}

func newMigrator(t *testing.T, c *testenv.RedisCluster) *migrator {
	m := &migrator{t: t}
	for i := range 3 {
		n := c.Node(i).Client()
		id, err := n.ClusterMyID(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		m.nodes, m.ids, m.addrs = append(m.nodes, n), append(m.ids, id), append(m.addrs, c.Addrs[i])
	}
	return m
}

// owner returns the index of the master serving slot.
func (m *migrator) owner(ctx context.Context, slot int) int {
	// Any master will do: migrate ends by telling every master the new owner.
	shards, err := m.nodes[0].ClusterShards(ctx).Result()
	if err != nil {
		m.t.Fatal(err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				for i, id := range m.ids {
					if n.Role == "master" && n.ID == id {
						return i
					}
				}
			}
		}
	}
	m.t.Fatalf("no owner for slot %d", slot)
	return -1
}

// migrate moves slot from master from to master to and returns the number
// of keys moved.
func (m *migrator) migrate(ctx context.Context, slot, from, to int) int {
	must := func(err error) {
		m.t.Helper()
		if err != nil {
			m.t.Fatalf("migrate slot %d: %v", slot, err)
		}
	}
	src, dst := m.nodes[from], m.nodes[to]
	must(dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", m.ids[from]).Err())
	must(src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", m.ids[to]).Err())
	host, port, _ := net.SplitHostPort(m.addrs[to])
	portN, _ := strconv.Atoi(port)
	n := 0
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 1).Result()
		must(err)
		if len(keys) == 0 {
			break
		}
		must(src.Migrate(ctx, host, strconv.Itoa(portN), keys[0], 0, 5*time.Second).Err())
		n++
		time.Sleep(50 * time.Millisecond) // let writers meet the half-moved slot
	}
	for _, c := range []*redis.Client{dst, src, m.nodes[3-from-to]} {
		must(c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", m.ids[to]).Err())
	}
	return n
}
