package processor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// TestBoardsSettleEndToEnd: a day board settles the day before the
// processor started (by the wall clock, at start) and, as soon as a record
// time passes today's close, today: one record each on boards.settled,
// keyed board/period, with the model's top and member count; the snapshot
// reads back; an event for the settled day that arrives afterwards (its
// record time still inside the day) goes to the DLQ as late.
func TestBoardsSettleEndToEnd(t *testing.T) {
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
	_, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs, func(c *processor.Config) { c.BoardExpireEvery = time.Hour })
	cl := k.Client()
	m := boardmodel.New(bs)
	produce := func(value string, at time.Time) *kgo.Record {
		r := &kgo.Record{Topic: topics.RTC, Key: []byte("k"), Value: []byte(value), Timestamp: at}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	dec := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: time.Minute}.WithDefaults())
	for i := range 12 {
		v := fmt.Sprintf(`{"type":"gift","room_id":"r-%d","user_id":"u","value":%d,"ts":%d}`, i%7, 1+i%4, now.Add(-time.Duration(i)*time.Second).UnixMilli())
		r := produce(v, now)
		evs, err := dec.Decode(nil, []byte(v), codec.SourceRTC, now)
		if err != nil {
			t.Fatal(err)
		}
		m.Record(r.Topic, r.Partition, r.Offset, r.Timestamp, evs)
	}
	// A record produced after today's close (grace included) settles today.
	closeAt := today.End.Add(bs[0].Grace())
	produce(fmt.Sprintf(`{"type":"join","room_id":"r-x","user_id":"u","ts":%d}`, now.UnixMilli()), closeAt.Add(time.Second))
	var got []*kgo.Record
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d settled records", len(got))
		}
		time.Sleep(50 * time.Millisecond)
		got = k.ReadAll(topics.Settled)
	}
	type rec struct {
		Board    string `json:"board"`
		Period   string `json:"period"`
		ClosedAt int64  `json:"closed_at"`
		Members  int64  `json:"members"`
		Top      []struct {
			Member    string `json:"member"`
			Rank      int64  `json:"rank"`
			Total     int64  `json:"total"`
			ReachedAt int64  `json:"reached_at"`
		} `json:"top"`
	}
	want := m.Ranking(0, today.Label, 0)
	var todays rec
	for _, r := range got {
		testenv.WantRecordKind(t, r, "boards.settled/1")
		var v rec
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		if string(r.Key) != "daily/"+v.Period {
			t.Fatalf("key %s, period %s", r.Key, v.Period)
		}
		if v.Period == today.Label {
			todays = v
			testenv.WriteExampleRecord(t, "boards.settled", r)
		}
	}
	if todays.Members != int64(len(want)) || len(todays.Top) != 5 || todays.ClosedAt != closeAt.UnixMilli() {
		t.Fatalf("today's record %+v, model %v", todays, want)
	}
	for i, e := range todays.Top {
		if (boardmodel.Entry{Member: e.Member, Rank: e.Rank, Total: e.Total, ReachedAt: e.ReachedAt}) != want[i] {
			t.Fatalf("rank %d: %+v, want %v", i+1, e, want[i])
		}
	}
	page, err := bst.Settled(context.Background(), "daily", today.Label, 0, 10)
	if err != nil || len(page.Top) != 5 || page.Members != int64(len(want)) {
		t.Fatalf("settled snapshot %+v %v", page, err)
	}
	// An event for the settled day, from a record produced inside the day:
	// late, to the DLQ.
	produce(fmt.Sprintf(`{"type":"gift","room_id":"r-late","user_id":"u","value":500,"ts":%d}`, now.UnixMilli()), now)
	deadline = time.Now().Add(30 * time.Second)
	for {
		dlq := k.ReadAll(topics.DLQ)
		if len(dlq) == 1 && strings.Contains(string(dlq[0].Headers[0].Value), "settled") {
			testenv.WantRecordKind(t, dlq[0], "callbacks.dlq/1")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq: %d records %q", len(dlq), dlq[0].Headers[0].Value)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if page2, _ := bst.Settled(context.Background(), "daily", today.Label, 0, 10); fmt.Sprint(page2) != fmt.Sprint(page) {
		t.Fatalf("the snapshot changed: %v", page2)
	}
	if n := len(k.ReadAll(topics.Settled)); n != 2 {
		t.Fatalf("%d settled records, want 2", n)
	}
}
