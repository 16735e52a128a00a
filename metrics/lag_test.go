package metrics_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/metrics"
)

const (
	testGroup = "rostrum-test"
	// slack bounds how much older than its timestamp says a record may be
	// found: the test's own run time, however slow the machine.
	slack = 120.0
)

// produceAt writes one record per timestamp to topic/partition, in order,
// and waits for the broker to acknowledge them. prod must partition manually.
func produceAt(tb testing.TB, prod *kgo.Client, topic string, partition int32, stamps ...time.Time) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, len(stamps))
	for i, ts := range stamps {
		recs[i] = &kgo.Record{Topic: topic, Partition: partition, Key: []byte("r-1"), Value: []byte("{}"), Timestamp: ts}
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		tb.Fatalf("produce to %s/%d: %v", topic, partition, err)
	}
}

// commit commits offsets for group: topic → partition → offset.
func commit(tb testing.TB, adm *kadm.Client, group string, offsets map[string]map[int32]int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	os := make(kadm.Offsets)
	for t, ps := range offsets {
		for p, at := range ps {
			os.AddOffset(t, p, at, -1)
		}
	}
	resp, err := adm.CommitOffsets(ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		tb.Fatalf("commit %v for %s: %v", offsets, group, err)
	}
}

func times(ts time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = ts
	}
	return out
}

// lagWant is the expected lag of one partition: exact records, and an age of
// at least minAge seconds (the timestamp the test gave the oldest unprocessed
// record) and less than minAge+slack, or exactly 0 when minAge is 0.
type lagWant struct {
	topic, partition string
	records          float64
	minAge           float64
}

func checkLag(tb testing.TB, p *metrics.Processor, want []lagWant) {
	tb.Helper()
	fams := scrape(tb, p)
	var total, oldest float64
	for _, w := range want {
		labels := "partition=" + w.partition + ",topic=" + w.topic
		if got := value(tb, fams, "rostrum_consumer_lag_records", labels); got != w.records {
			tb.Errorf("rostrum_consumer_lag_records{%s} = %v, want %v", labels, got, w.records)
		}
		age := value(tb, fams, "rostrum_consumer_lag_seconds", labels)
		switch {
		case w.minAge == 0 && age != 0:
			tb.Errorf("rostrum_consumer_lag_seconds{%s} = %v, want 0 (nothing to wait for)", labels, age)
		case w.minAge > 0 && (age < w.minAge || age >= w.minAge+slack):
			tb.Errorf("rostrum_consumer_lag_seconds{%s} = %v, want in [%v, %v)", labels, age, w.minAge, w.minAge+slack)
		}
		total += w.records
		oldest = max(oldest, age)
	}
	for _, name := range []string{"rostrum_consumer_lag_records", "rostrum_consumer_lag_seconds"} {
		if n := len(fams[name].GetMetric()); n != len(want) {
			tb.Errorf("%s has %d series, want %d: %v", name, n, len(want), series(fams, name))
		}
	}
	if got := value(tb, fams, "rostrum_consumer_group_lag_records", ""); got != total {
		tb.Errorf("rostrum_consumer_group_lag_records = %v, want %v", got, total)
	}
	if got := value(tb, fams, "rostrum_consumer_group_lag_seconds", ""); got != oldest {
		tb.Errorf("rostrum_consumer_group_lag_seconds = %v, want the oldest partition's %v", got, oldest)
	}
	if records, seconds := p.Lag(); float64(records) != total || seconds != oldest {
		tb.Errorf("Lag() = %d, %v; want %v, %v", records, seconds, total, oldest)
	}
	parts := p.PartitionLags()
	if len(parts) != len(want) {
		tb.Errorf("PartitionLags() = %v, want %d partitions", parts, len(want))
	}
	for _, pl := range parts {
		labels := fmt.Sprintf("partition=%d,topic=%s", pl.Partition, pl.Topic)
		if got := value(tb, fams, "rostrum_consumer_lag_records", labels); float64(pl.Records) != got {
			tb.Errorf("PartitionLags() %s: %d records, the gauge says %v", labels, pl.Records, got)
		}
		if got := value(tb, fams, "rostrum_consumer_lag_seconds", labels); pl.Seconds != got {
			tb.Errorf("PartitionLags() %s: %v s, the gauge says %v", labels, pl.Seconds, got)
		}
	}
	if !slices.IsSortedFunc(parts, func(a, b metrics.PartitionLag) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	}) {
		tb.Errorf("PartitionLags() not ordered by topic and partition: %v", parts)
	}
}

func TestLag(t *testing.T) {
	k := testenv.StartKafka(t, testenv.WithTopics(3, "lag.a"), testenv.WithTopics(1, "lag.b", "lag.c", "lag.d"))
	prod := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := k.Admin()
	ctx := context.Background()

	now := time.Now()
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	// lag.a/0: offsets 0-3 processed, 4-7 30 s old, 8-9 ten minutes old
	// (timestamps need not grow with offsets).
	produceAt(t, prod, "lag.a", 0, append(append(times(ago(time.Hour), 4), times(ago(30*time.Second), 4)...), times(ago(10*time.Minute), 2)...)...)
	// lag.a/1: all processed.
	produceAt(t, prod, "lag.a", 1, times(ago(10*time.Second), 5)...)
	// lag.a/2: nothing committed on this partition.
	produceAt(t, prod, "lag.a", 2, ago(45*time.Second), ago(44*time.Second), ago(43*time.Second))
	// lag.b: nothing committed on the whole topic.
	produceAt(t, prod, "lag.b", 0, ago(90*time.Second), ago(89*time.Second))
	// lag.c: committed at 1, but retention removed offsets 0-2.
	produceAt(t, prod, "lag.c", 0, append(times(ago(5*time.Minute), 3), times(ago(20*time.Second), 3)...)...)
	// lag.d: committed at 1, but retention removed everything.
	produceAt(t, prod, "lag.d", 0, times(ago(time.Minute), 3)...)
	commit(t, adm, testGroup, map[string]map[int32]int64{"lag.a": {0: 4, 1: 5}, "lag.c": {0: 1}, "lag.d": {0: 1}})
	del, err := adm.DeleteRecords(ctx, kadm.Offsets{
		"lag.c": {0: {Topic: "lag.c", Partition: 0, At: 3}},
		"lag.d": {0: {Topic: "lag.d", Partition: 0, At: 3}},
	})
	if err == nil {
		err = del.Error()
	}
	if err != nil {
		t.Fatalf("delete records: %v", err)
	}

	topics := []string{"lag.a", "lag.b", "lag.c", "lag.d"}
	p := metrics.New("test")
	w := p.NewLagWatcher(k.Client(), testGroup, topics)
	defer w.Close()
	if err := w.Measure(ctx); err != nil {
		t.Fatalf("Measure: %v", err)
	}
	checkLag(t, p, []lagWant{
		{"lag.a", "0", 6, 30}, // end 10 − committed 4; record 4 is 30 s old
		{"lag.a", "1", 0, 0},  // end 5 − committed 5
		{"lag.a", "2", 3, 45}, // end 3 − start 0
		{"lag.b", "0", 2, 90}, // end 2 − start 0
		{"lag.c", "0", 5, 20}, // end 6 − committed 1; the first record left is 3, 20 s old
		{"lag.d", "0", 2, 0},  // end 3 − committed 1, but no record is left to wait for
	})

	t.Run("group without commits", func(t *testing.T) {
		p := metrics.New("test")
		w := p.NewLagWatcher(k.Client(), "nobody", topics)
		defer w.Close()
		if err := w.Measure(ctx); err != nil {
			t.Fatalf("Measure: %v", err)
		}
		checkLag(t, p, []lagWant{
			{"lag.a", "0", 10, 3600},
			{"lag.a", "1", 5, 10},
			{"lag.a", "2", 3, 45},
			{"lag.b", "0", 2, 90},
			{"lag.c", "0", 3, 20}, // end 6 − start 3
			{"lag.d", "0", 0, 0},  // end 3 − start 3
		})
	})

	// The same watcher (and its record reader) measures again after the
	// group committed further on lag.a/0: record 8 is ten minutes old.
	commit(t, adm, testGroup, map[string]map[int32]int64{"lag.a": {0: 8}})
	if err := w.Measure(ctx); err != nil {
		t.Fatalf("second Measure: %v", err)
	}
	checkLag(t, p, []lagWant{
		{"lag.a", "0", 2, 600},
		{"lag.a", "1", 0, 0},
		{"lag.a", "2", 3, 45},
		{"lag.b", "0", 2, 90},
		{"lag.c", "0", 5, 20},
		{"lag.d", "0", 2, 0},
	})

	// A deleted topic loses its series; the measurement says why.
	resp, err := adm.DeleteTopics(ctx, "lag.b")
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("delete topic lag.b: %v", err)
	}
	err = w.Measure(ctx)
	if err == nil || !strings.Contains(err.Error(), "lag.b") {
		t.Errorf("Measure after deleting lag.b: error %v, want one naming lag.b", err)
	}
	checkLag(t, p, []lagWant{
		{"lag.a", "0", 2, 600},
		{"lag.a", "1", 0, 0},
		{"lag.a", "2", 3, 45},
		{"lag.c", "0", 5, 20},
		{"lag.d", "0", 2, 0},
	})
}

func TestWatchLag(t *testing.T) {
	k := testenv.StartKafka(t, testenv.WithTopics(2, "watch.a"))
	prod := k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := k.Admin()
	now := time.Now()
	produceAt(t, prod, "watch.a", 0, times(now.Add(-30*time.Second), 4)...)
	produceAt(t, prod, "watch.a", 1, times(now.Add(-30*time.Second), 2)...)
	commit(t, adm, testGroup, map[string]map[int32]int64{"watch.a": {0: 1, 1: 2}})

	p := metrics.New("test")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.WatchLag(ctx, k.Client(), testGroup, []string{"watch.a"}, 20*time.Millisecond, zaptest.NewLogger(t))
	}()
	defer func() {
		cancel()
		<-done
	}()

	// waitLag waits until WatchLag has measured records lag.
	waitLag := func(records int64) float64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, s := p.Lag()
			if r == records {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("Lag() = %d, %v; want %d records", r, s, records)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if s := waitLag(3); s < 30 || s >= 30+slack {
		t.Errorf("lag seconds = %v, want in [30, %v)", s, 30+slack)
	}
	commit(t, adm, testGroup, map[string]map[int32]int64{"watch.a": {0: 4}})
	if s := waitLag(0); s != 0 {
		t.Errorf("lag seconds = %v with no lag, want 0", s)
	}

	fams := scrape(t, p)
	for _, name := range []string{"rostrum_records_consumed_total", "rostrum_events_applied_total"} {
		if v := value(t, fams, name, "topic=watch.a"); v != 0 {
			t.Errorf("%s{topic=watch.a} = %v, want 0", name, v)
		}
	}

	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("WatchLag did not return after its context ended")
	}
}
