package processor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// TestBoardsRollingDecayEndToEnd: through Kafka, the WAL and the scripts, a
// rolling board of two hours with a 1-hour half-life shows each gift at its
// decayed value; an expiry an hour and a half on moves the base and takes
// the older gift's slice out, leaving the newer at its value; with the
// boards' clock three hours ahead of a record (a consumer lagging behind),
// a gift whose slice is still in the window but whose half-life is below
// the base is late in Redis, and its record goes to the DLQ with the
// reason.
func TestBoardsRollingDecayEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "hot-2h", Events: []string{"gift"}, Member: "room_id", Kind: "rolling", Slice: 5 * time.Minute, Slices: 24,
			Decay: &boarddef.Decay{HalfLife: "1h"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	ctx := context.Background()
	now := time.Now()
	clock := now
	bst.SetClock(func() time.Time { return clock })
	cl := k.Client()
	send := func(room string, value int, ts time.Time) {
		t.Helper()
		v := fmt.Sprintf(`{"type":"gift","room_id":%q,"user_id":"u","value":%d,"ts":%d}`, room, value, ts.UnixMilli())
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topics.Client, Key: []byte(room), Value: []byte(v), Timestamp: now}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	top := func() string {
		t.Helper()
		page, err := bst.Top(ctx, "hot-2h", "", "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range page.Members {
			out = append(out, fmt.Sprintf("%s %d", e.Member, e.Total))
		}
		return strings.Join(out, ", ")
	}
	send("r-1", 800, now.Add(-time.Hour)) // worth 400 now
	send("r-2", 600, now)
	waitRecords(t, p, 2)
	if got, want := top(), "r-2 600, r-1 400"; got != want {
		t.Fatalf("hot-2h: %s, want %s", got, want)
	}
	// 90 minutes on: r-1's slice has left the window, r-2 is worth
	// 600·2^-1.5 = 212.1.
	clock = now.Add(90 * time.Minute)
	res, err := bst.Expire(ctx, clock)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rebased == 0 || res.Subtracted == 0 {
		t.Fatalf("expiry %+v: want a rebase and a slice subtracted", res)
	}
	if got, want := top(), "r-2 212"; got != want {
		t.Fatalf("hot-2h 90 minutes on: %s, want %s", got, want)
	}
	// Three hours on the base has passed r-4's half-life (its slice, 20
	// minutes before now, is still in the window the last expiry left).
	clock = now.Add(3 * time.Hour)
	send("r-4", 100, now.Add(-20*time.Minute))
	waitRecords(t, p, 3)
	if got, want := top(), "r-2 75"; got != want {
		t.Fatalf("hot-2h three hours on: %s, want %s", got, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var reasons []string
		for _, r := range k.ReadAll(topics.DLQ) {
			reasons = append(reasons, string(r.Headers[0].Value))
		}
		want := "board hot-2h: event[0]: late: its time was below the decay board's base when it was applied"
		if len(reasons) == 1 && reasons[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq reasons %q, want [%s]", reasons, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
