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

// TestBoardsDecayEndToEnd: through Kafka, the WAL and the scripts, a total
// board counts every gift and a decay board of a 1-hour half-life shows
// each at its decayed value; with the boards' clock three hours ahead of
// the records (a consumer lagging behind), the decay board's base has
// passed the gifts' half-life: they are late in Redis, and their records
// go to the DLQ with the reason, while the total board counts them.
func TestBoardsDecayEndToEnd(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.All()...))
	rc := testenv.StartRedis(t).Client()
	bs, err := boarddef.Compile([]boarddef.Config{
		{Name: "all-time", Events: []string{"gift"}, Member: "room_id", Kind: "total"},
		{Name: "hot", Events: []string{"gift"}, Member: "room_id", Kind: "total", Decay: &boarddef.Decay{HalfLife: "1h"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p, bst := startBoardProcessor(t, k, rc, t.TempDir(), bs)
	now := time.Now()
	clock := now
	bst.SetClock(func() time.Time { return clock })
	cl := k.Client()
	send := func(room string, value int, ts time.Time) {
		t.Helper()
		v := fmt.Sprintf(`{"type":"gift","room_id":%q,"user_id":"u","value":%d,"ts":%d}`, room, value, ts.UnixMilli())
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topics.Client, Key: []byte(room), Value: []byte(v), Timestamp: now}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	send("r-1", 800, now.Add(-time.Hour)) // worth 400 now
	send("r-2", 600, now)
	waitRecords(t, p, 2)
	top := func(name string) string {
		t.Helper()
		page, err := bst.Top(context.Background(), name, "", "", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range page.Members {
			out = append(out, fmt.Sprintf("%s %d", e.Member, e.Total))
		}
		return strings.Join(out, ", ")
	}
	if got, want := top("hot"), "r-2 600, r-1 400"; got != want {
		t.Fatalf("hot: %s, want %s", got, want)
	}
	clock = now.Add(3 * time.Hour) // the base moves past both gifts' half-lives
	send("r-3", 100, now)
	waitRecords(t, p, 3)
	if got, want := top("all-time"), "r-1 800, r-2 600, r-3 100"; got != want {
		t.Fatalf("all-time: %s, want %s", got, want)
	}
	// r-1 and r-2 were worth 400 and 600 at now: 50 and 75 three hours on.
	if got, want := top("hot"), "r-2 75, r-1 50"; got != want {
		t.Fatalf("hot three hours on: %s, want %s", got, want)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var reasons []string
		for _, r := range k.ReadAll(topics.DLQ) {
			reasons = append(reasons, string(r.Headers[0].Value))
		}
		want := "board hot: event[0]: late: its time was below the decay board's base when it was applied"
		if len(reasons) == 1 && reasons[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dlq reasons %q, want [%s]", reasons, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
