package processor_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// TestBoardsSettledSurviveRedisLoss: a day board settles yesterday (at
// start) and today (a record time past today's close); then Redis loses
// its data. The next batch rebuilds, restoring the settled periods from
// boards.settled before the boards adopt the new generation: today's
// snapshot reads back, a settlement after the rebuild settles nothing
// again, an event for today is late, and boards.settled still holds one
// record per period (the snapshots, frozen flags and registrations are
// restored in each period's slot).
func TestBoardsSettledSurviveRedisLoss(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{{Name: "daily", Events: []string{"gift"}, Member: "room_id", Kind: "periodic",
		Period: "day", Tie: "first-reached", SettleTop: 5}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	today := bs[0].Period(now)
	if today.End.Sub(now) < 5*time.Minute || now.Sub(today.Start) < 5*time.Minute {
		t.Skip("too close to midnight UTC")
	}
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	cl := k.Client()
	produced := int64(0)
	produce := func(value string, at time.Time) {
		r := &kgo.Record{Topic: topics.RTC, Key: []byte("k"), Value: []byte(value), Timestamp: at}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced++
	}
	for i := range 8 {
		produce(fmt.Sprintf(`{"type":"gift","room_id":"r-%d","user_id":"u","value":%d,"ts":%d}`, i%5, 1+i, now.Add(-time.Duration(i)*time.Second).UnixMilli()), now)
	}
	closeAt := today.End.Add(bs[0].Grace())
	produce(fmt.Sprintf(`{"type":"join","room_id":"r-x","user_id":"u","ts":%d}`, now.UnixMilli()), closeAt.Add(time.Second))
	deadline := time.Now().Add(30 * time.Second)
	for len(k.ReadAll(topics.Settled)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d settled records", len(k.ReadAll(topics.Settled)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	before, err := bst.Settled(context.Background(), "daily", today.Label, 0, 10)
	if err != nil {
		t.Fatal(err)
	}

	if err := rc.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	produce(fmt.Sprintf(`{"type":"join","room_id":"r-y","user_id":"u","ts":%d}`, now.UnixMilli()), closeAt.Add(2*time.Second))
	waitRecords(t, p, produced)
	if p.Stats().RedisResets.Load() == 0 {
		t.Fatal("the Redis reset was not noticed")
	}
	after, err := bst.Settled(context.Background(), "daily", today.Label, 0, 10)
	if err != nil || fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("today's snapshot after the loss: %+v %v, before %+v", after, err, before)
	}
	res, err := bst.Settle(context.Background(), closeAt.Add(time.Minute))
	if err != nil || res.Settled != 0 {
		t.Fatalf("settle after the rebuild: %+v %v, want nothing settled", res, err)
	}
	// An event for today, produced inside today: its period is settled.
	produce(fmt.Sprintf(`{"type":"gift","room_id":"r-late","user_id":"u","value":500,"ts":%d}`, now.UnixMilli()), now)
	waitRecords(t, p, produced)
	if top, err := bst.Top(context.Background(), "daily", today.Label, "", 0, 10); err != nil || len(top.Members) != 0 {
		t.Fatalf("today's live ranking after the loss: %+v %v (settled events are not counted again)", top, err)
	}
	if n := len(k.ReadAll(topics.Settled)); n != 2 {
		t.Fatalf("%d settled records, want 2", n)
	}
}
