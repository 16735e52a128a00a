package processor_test

import (
	"context"
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

// TestBoardsCorrectionsEndToEnd: through Kafka, the WAL and the scripts, a
// refund lowers a total (clamped at the floor), decimal values add up
// exactly on a scale-10 board, a remove event takes a member off every
// board it names, and the refused inputs (a negative value on a board
// without allow-negative, a value finer than the scale, a remove for an
// unknown board) go to the DLQ with their reason; the rankings equal the
// model's.
func TestBoardsCorrectionsEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "gifts", Events: []string{"gift"}, Member: "user_id", Kind: "periodic", Period: "day", Tie: "first-reached",
			AllowNegative: true, Settle: "false"},
		{Name: "scores", Events: []string{"score"}, Member: "user_id", Kind: "rolling", Slice: time.Minute, Slices: 60, Scale: 10},
	})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if d := bs[0].Period(now); d.End.Sub(now) < 5*time.Minute || now.Sub(d.Start) < 5*time.Minute {
		t.Skip("too close to midnight UTC")
	}
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	m := boardmodel.New(bs)
	dec := codec.NewDecoder(codec.DecodeConfig{MaxFutureSkew: time.Minute}.WithDefaults())
	cl := k.Client()
	ts := now.Add(-time.Minute).UnixMilli()
	values := []string{
		`{"type":"gift","room_id":"r","user_id":"u-a","value":30,"ts":%d}`,
		`{"type":"gift","room_id":"r","user_id":"u-b","value":20,"ts":%d}`,
		`{"type":"gift","room_id":"r","user_id":"u-b","value":-25,"ts":%d,"id":"refund-1"}`, // u-b shows 0
		`{"type":"score","room_id":"r","user_id":"u-a","value":12.5,"ts":%d}`,
		`{"type":"score","room_id":"r","user_id":"u-a","value":0.25,"ts":%d}`, // finer than 0.1: DLQ
		`{"type":"score","room_id":"r","user_id":"u-c","value":-1,"ts":%d}`,   // scores refuse negatives: DLQ
		`{"type":"score","room_id":"r","user_id":"u-c","value":7.10,"ts":%d}`,
		`{"type":"gift","room_id":"r","user_id":"u-c","value":5,"ts":%d}`,
		`{"type":"remove","board":"gifts","room_id":"gifts","user_id":"u-c","ts":%d}`,
		`{"type":"remove","board":"scores","room_id":"scores","user_id":"u-a","ts":%d}`,
		`{"type":"remove","board":"nope","room_id":"nope","user_id":"u-a","ts":%d}`, // no such board: DLQ
		`{"type":"score","room_id":"r","user_id":"u-a","value":1.5,"ts":%d}`,        // after the removal: counts
	}
	for i, v := range values {
		v = fmt.Sprintf(v, ts+int64(i))
		r := &kgo.Record{Topic: topics.RTC, Key: []byte("r"), Value: []byte(v), Timestamp: now}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		evs, err := dec.Decode(nil, []byte(v), codec.SourceRTC, now)
		if err != nil {
			t.Fatal(err)
		}
		m.Record(r.Topic, r.Partition, r.Offset, r.Timestamp, evs)
	}
	waitRecords(t, p, int64(len(values)))
	for bi, b := range bs {
		page, err := bst.Top(context.Background(), b.Name(), "", "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := m.Ranking(bi, page.Period, 0)
		if len(want) != len(page.Members) {
			t.Fatalf("%s: redis %+v, model %+v", b.Name(), page.Members, want)
		}
		for i, e := range page.Members {
			if boardmodel.Entry(e) != want[i] {
				t.Fatalf("%s: redis %+v, model %+v", b.Name(), page.Members, want)
			}
		}
	}
	var got []string
	for _, b := range bs {
		page, _ := bst.Top(context.Background(), b.Name(), "", "", 0, 10)
		for _, e := range page.Members {
			got = append(got, b.Name()+" "+e.Member+" "+b.FormatUnits(e.Total))
		}
	}
	if want := "[gifts u-a 30 gifts u-b 0 scores u-c 7.1 scores u-a 1.5]"; fmt.Sprint(got) != want {
		t.Fatalf("rankings %v, want %s", got, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var reasons []string
		for _, r := range k.ReadAll(topics.DLQ) {
			reasons = append(reasons, string(r.Headers[0].Value))
		}
		want := []string{
			"board scores: event[0]: value: 0.25 is finer than the board's scale 10 (at most 1 decimal places)",
			"board scores: event[0]: value: -1 is negative and the board does not allow negative values (allow-negative: true)",
			`board nope: event[0]: board: no board named "nope" is configured`,
		}
		if strings.Join(reasons, "\n") == strings.Join(want, "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq reasons:\n%s\nwant\n%s", strings.Join(reasons, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
