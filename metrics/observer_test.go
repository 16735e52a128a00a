package metrics_test

import (
	"fmt"
	"maps"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/metrics"
	"github.com/rostrumhq/rostrum/processor"
)

var (
	_ processor.Observer             = (*metrics.Processor)(nil)
	_ processor.BackPressureObserver = (*metrics.Processor)(nil)
	_ processor.BoardObserver        = (*metrics.Processor)(nil)
)

func TestObserverCounters(t *testing.T) {
	p := metrics.New("test")
	p.Consumed("in.rtc", 5)
	p.Consumed("in.rtc", 5)
	p.Consumed("in.client", 1)
	p.Consumed("in.rtc", -3) // ignored: a counter cannot go down
	p.Applied("in.rtc", 7)
	p.DLQ("in.rtc", "ts")
	p.DLQ("in.rtc", "ts")
	p.DLQ("in.signal", "json")
	p.Published(4)
	p.Published(0)
	p.Conflicts(2)
	p.Conflicts(1)
	p.Retry()
	p.RedisReset()
	p.Rebalance("assigned", 6)
	p.Rebalance("revoked", 2)
	p.Rebalance("lost", 1)
	p.Rebalance("assigned", 0) // no partitions: not a rebalance that moved anything
	p.BoardsApplied(5, 2, 1, 0)
	p.BoardsApplied(3, 0, 0, 1)

	if got, want := p.DLQByReason(), map[string]int64{"ts": 2, "json": 1}; !maps.Equal(got, want) {
		t.Errorf("DLQByReason() = %v, want %v", got, want)
	}
	fams := scrape(t, p)
	for _, c := range []struct {
		name, labels string
		want         float64
	}{
		{"rostrum_records_consumed_total", "topic=in.rtc", 10},
		{"rostrum_records_consumed_total", "topic=in.client", 1},
		{"rostrum_events_applied_total", "topic=in.rtc", 7},
		{"rostrum_dlq_records_total", "reason=ts,topic=in.rtc", 2},
		{"rostrum_dlq_records_total", "reason=json,topic=in.signal", 1},
		{"rostrum_outputs_published_total", "", 4},
		{"rostrum_stable_conflicts_total", "", 3},
		{"rostrum_batch_retries_total", "", 1},
		{"rostrum_redis_resets_total", "", 1},
		{"rostrum_rebalances_total", "kind=assigned", 1},
		{"rostrum_rebalances_total", "kind=revoked", 1},
		{"rostrum_rebalances_total", "kind=lost", 1},
		{"rostrum_assigned_partitions", "", 3},
		{"rostrum_board_events_total", "result=counted", 8},
		{"rostrum_board_events_total", "result=duplicate", 2},
		{"rostrum_board_saturated_total", "", 1},
		{"rostrum_board_gaps_closed_total", "", 1},
	} {
		if got := value(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s{%s} = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(fams["rostrum_dlq_records_total"].GetMetric()); n != 2 {
		t.Errorf("rostrum_dlq_records_total has %d series, want 2: %v", n, series(fams, "rostrum_dlq_records_total"))
	}
}

func TestObserverHistograms(t *testing.T) {
	p := metrics.New("test")
	p.Batch(3, 20*time.Millisecond)
	p.Batch(3000, 2*time.Second)
	p.RedisRoundTrip("apply", time.Millisecond)
	p.RedisRoundTrip("apply", 3*time.Millisecond)
	p.RedisRoundTrip("store", 2*time.Millisecond)
	p.WALAppend(4 * time.Millisecond)
	for range 3 {
		p.ObserveFsync(time.Millisecond)
	}

	fams := scrape(t, p)
	for _, c := range []struct {
		name, labels string
		count        uint64
		sum          float64
	}{
		{"rostrum_batch_records", "", 2, 3003},
		{"rostrum_batch_duration_seconds", "", 2, 2.02},
		{"rostrum_redis_roundtrip_seconds", "op=apply", 2, 0.004},
		{"rostrum_redis_roundtrip_seconds", "op=store", 1, 0.002},
		{"rostrum_wal_append_seconds", "", 1, 0.004},
		{"rostrum_wal_fsync_seconds", "", 3, 0.003},
	} {
		h := histogram(t, fams, c.name, c.labels)
		if h.GetSampleCount() != c.count {
			t.Errorf("%s{%s} count = %d, want %d", c.name, c.labels, h.GetSampleCount(), c.count)
		}
		if d := h.GetSampleSum() - c.sum; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s{%s} sum = %v, want %v", c.name, c.labels, h.GetSampleSum(), c.sum)
		}
	}

	// Buckets are cumulative: 3 records fall in le=5, 3000 in le=5000.
	want := map[float64]uint64{1: 0, 2: 0, 5: 1, 2000: 1, 5000: 2, 10000: 2}
	for _, b := range histogram(t, fams, "rostrum_batch_records", "").GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("rostrum_batch_records{le=%v} = %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
		delete(want, b.GetUpperBound())
	}
	if len(want) > 0 {
		t.Errorf("rostrum_batch_records lacks the buckets %v", want)
	}
}

func TestKnownChildrenExportedAtZero(t *testing.T) {
	fams := scrape(t, metrics.New("test"))
	for _, op := range []string{"apply", "store", "boards"} {
		if h := histogram(t, fams, "rostrum_redis_roundtrip_seconds", "op="+op); h.GetSampleCount() != 0 {
			t.Errorf("op=%s count = %d before any observation", op, h.GetSampleCount())
		}
	}
	for _, kind := range []string{"assigned", "revoked", "lost"} {
		if v := value(t, fams, "rostrum_rebalances_total", "kind="+kind); v != 0 {
			t.Errorf("rostrum_rebalances_total{kind=%s} = %v before any rebalance", kind, v)
		}
	}
	for _, name := range []string{"rostrum_batch_records", "rostrum_wal_fsync_seconds"} {
		histogram(t, fams, name, "")
	}
	for _, name := range []string{"rostrum_assigned_partitions", "rostrum_consumer_group_lag_records", "rostrum_consumer_group_lag_seconds"} {
		if v := value(t, fams, name, ""); v != 0 {
			t.Errorf("%s = %v at start", name, v)
		}
	}
}

func TestEnvLabel(t *testing.T) {
	p := metrics.New("gray")
	p.Consumed("in.rtc", 1)
	for name, fam := range scrape(t, p) {
		for _, m := range fam.GetMetric() {
			var env string
			for _, l := range m.GetLabel() {
				if l.GetName() == "env" {
					env = l.GetValue()
				}
			}
			switch rostrum := strings.HasPrefix(name, "rostrum_"); {
			case rostrum && env != "gray":
				t.Errorf("%s{%s}: env = %q, want gray", name, labelString(m), env)
			case !rostrum && env != "":
				t.Errorf("%s: env = %q, want none on the runtime metrics", name, env)
			}
		}
	}

	for name, fam := range scrape(t, metrics.New("")) {
		for _, m := range fam.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "env" {
					t.Errorf("New(\"\"): %s has an env label", name)
				}
			}
		}
	}
}

func TestRuntimeCollectors(t *testing.T) {
	fams := scrape(t, metrics.New("test"))
	want := []string{"go_goroutines"}
	if runtime.GOOS == "linux" {
		want = append(want, "process_cpu_seconds_total", "process_resident_memory_bytes")
	}
	for _, name := range want {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s not exported", name)
		}
	}
}

// The type label of rostrum_events_ignored_total is bounded: types beyond
// the first MaxIgnoredTypes count as other.
func TestIgnoredTypesBounded(t *testing.T) {
	p := metrics.New("test")
	for i := range metrics.MaxIgnoredTypes + 10 {
		p.Ignored("in.rtc", fmt.Sprintf("type-%d", i), 2)
	}
	p.Ignored("in.rtc", "type-0", 1)
	fams := scrape(t, p)
	ms := fams["rostrum_events_ignored_total"].GetMetric()
	if len(ms) != metrics.MaxIgnoredTypes+1 {
		t.Fatalf("%d series, want %d", len(ms), metrics.MaxIgnoredTypes+1)
	}
	var other, first float64
	for _, m := range ms {
		for _, l := range m.GetLabel() {
			switch {
			case l.GetName() == "type" && l.GetValue() == metrics.IgnoredOther:
				other = m.GetCounter().GetValue()
			case l.GetName() == "type" && l.GetValue() == "type-0":
				first = m.GetCounter().GetValue()
			}
		}
	}
	if other != 20 || first != 3 {
		t.Fatalf("other %v, type-0 %v; want 20, 3", other, first)
	}
}
