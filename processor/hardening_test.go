package processor_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/ranking"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

// countingStore records the largest number of rooms in one Apply round
// trip and how many round trips there were.
type countingStore struct {
	*sink.Store
	applies, maxRooms atomic.Int64
}

func (c *countingStore) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	c.applies.Add(1)
	if n := int64(len(rooms)); n > c.maxRooms.Load() {
		c.maxRooms.Store(n)
	}
	return c.Store.Apply(ctx, rooms, acks)
}

// TestHardeningLimits sends records that break each input limit through the
// whole processor and checks that each lands in the DLQ with a clear reason
// while the valid records around it are applied: the record size, the JSON
// depth, the events per array record, invalid UTF-8, the members per room
// cap (existing members keep working), and the rooms per Redis round trip
// (a batch over it is split, nothing is rejected).
func TestHardeningLimits(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	r := testenv.StartRedis(t)
	ts := time.Now().UnixMilli()
	ev := func(room, user, typ, value string) string {
		if value != "" {
			value = `,"value":` + value
		}
		return fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":%q%s,"ts":%d}`, room, user, typ, value, ts)
	}
	bad := map[string]string{ // record value → the DLQ reason it must get
		ev("lim-a", "u-1", "join", "")[:60] + `,"pad":"` + strings.Repeat("x", 4096) + `"}`:                                      "bytes exceeds limit 4096",
		`{"room_id":"lim-a","user_id":"u-1","type":"join","ts":1,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`: "json: nesting deeper than 32",
		"[" + strings.Repeat(ev("lim-a", "u-1", "join", "")+",", 5) + ev("lim-a", "u-1", "join", "") + "]":                       "record: more than 5 events",
		ev("lim-a", "u-1", "join", "")[:60] + `,"note":"caf` + "\xe9" + `"}`:                                                     "invalid UTF-8 in string",
		ev("cap", "u-4", "join", ""):   `event[0].user_id: room "cap" has reached its members cap; new member "u-4" refused`,
		ev("cap", "u-5", "audio", "1"): `event[0].user_id: room "cap" has reached its members cap; new member "u-5" refused`,
	}
	for v := range bad {
		if strings.HasPrefix(v, `{"room_id":"cap"`) {
			continue
		}
		k.Produce(topics.RTC, []byte("lim-a"), []byte(v))
	}
	// The cap room, in order on one partition: three members fill it, the
	// fourth and fifth are refused, the first keeps changing.
	for _, v := range []string{ev("cap", "u-1", "join", ""), ev("cap", "u-2", "join", ""), ev("cap", "u-3", "join", ""),
		ev("cap", "u-4", "join", ""), ev("cap", "u-5", "audio", "1"), ev("cap", "u-1", "volume", "900")} {
		k.Produce(topics.Client, []byte("cap"), []byte(v))
	}
	// Twenty rooms, one member each, more than MaxRoomsPerApply.
	const rooms = 20
	for i := range rooms {
		room := fmt.Sprintf("many-%d", i)
		k.Produce(topics.Signal, []byte(room), []byte(ev(room, "u-1", "join", "")))
	}
	total := int64(len(bad) - 2 + 6 + rooms)

	rc := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rc.Close()
	redisStore, err := sink.New(rc, sink.Config{Env: env, CacheMembers: sink.DefaultCacheMembers, MaxMembers: 3})
	if err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: redisStore}
	log, err := wal.Open(t.TempDir(), wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := processor.New(ctx, processor.Config{
		Brokers: k.Seeds, Env: env, KafkaOpts: testenv.FastGroupOpts(),
		Decode:           codec.DecodeConfig{MaxRecordBytes: 4096, MaxEvents: 5},
		MaxRoomsPerApply: 4,
		// Dwell and Grace 0 (none): the final lists are compared with the model at once.
	}, store, log)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for p.Stats().Records.Load() < total {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	got := map[string]string{}
	for _, rec := range k.ReadAll(topics.DLQ) {
		for _, h := range rec.Headers {
			if h.Key == "rostrum-error" {
				got[string(rec.Value)] = string(h.Value)
			}
		}
	}
	for v, want := range bad {
		if !strings.Contains(got[v], want) {
			t.Errorf("DLQ reason of %.60q… is %q, want it to contain %q", v, got[v], want)
		}
	}
	if len(got) != len(bad) {
		t.Errorf("DLQ holds %d records, want %d", len(got), len(bad))
	}

	ctx = context.Background()
	members, _ := rc.HKeys(ctx, sink.RoomKeys(env, "cap").Members).Result()
	if len(members) != 3 {
		t.Errorf("room cap holds members %v, want u-1, u-2, u-3", members)
	}
	top, _ := rc.ZRangeArgs(ctx, redis.ZRangeArgs{Key: sink.RoomKeys(env, "cap").Ranking, Start: 0, Stop: 0, Rev: true}).Result()
	if len(top) != 1 || top[0] != "u-1" {
		t.Errorf("room cap is led by %v, want u-1 (volume 900 after the room filled up)", top)
	}
	for i := range rooms {
		n, _ := rc.ZCard(ctx, sink.RoomKeys(env, fmt.Sprintf("many-%d", i)).Ranking).Result()
		if n != 1 {
			m, _ := rc.HGetAll(ctx, sink.RoomKeys(env, fmt.Sprintf("many-%d", i)).Members).Result()
			t.Errorf("room many-%d ranks %d members, want 1 (members %q)", i, n, m)
		}
	}
	if n := store.maxRooms.Load(); n > 4 {
		t.Errorf("an apply round trip carried %d rooms, over MaxRoomsPerApply 4", n)
	}
	t.Logf("%d apply round trips of at most %d rooms", store.applies.Load(), store.maxRooms.Load())
}
