package metrics_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/metrics"
)

// observeAll makes one observation of each kind and one lag measurement.
func observeAll(t *testing.T) *metrics.Processor {
	t.Helper()
	k := testenv.StartKafka(t, testenv.WithTopics(1, "names.a"))
	produceAt(t, k.Client(kgo.RecordPartitioner(kgo.ManualPartitioner())), "names.a", 0, time.Now())

	p := metrics.New("test")
	p.Consumed("names.a", 1)
	p.Applied("names.a", 1)
	p.DLQ("names.a", "ts")
	p.Batch(1, time.Millisecond)
	p.RedisRoundTrip("apply", time.Millisecond)
	p.WALAppend(time.Millisecond)
	p.ObserveFsync(time.Millisecond)
	p.Published(1)
	p.Ignored("names.a", "tip", 1)
	p.Conflicts(1)
	p.Retry()
	p.Rebalance("assigned", 1)
	p.RedisReset()
	p.PublishLatency(20 * time.Millisecond)
	p.BuildInfo("v1.2.3", "abc123", "go1.26.8")
	p.HTTPRequest("/v1/rooms/{room}/top", 200)
	p.HTTPDuration("/v1/rooms/{room}/top", time.Millisecond)
	p.WatchRedisPool(func() metrics.RedisPool { return metrics.RedisPool{Hits: 5, Misses: 1, Total: 2, Idle: 1} })
	p.WatchStateCache(func() metrics.StateCache { return metrics.StateCache{Members: 3, Merged: 2, Fast: 1, Loaded: 1} })
	w := p.NewLagWatcher(k.Client(), testGroup, []string{"names.a"})
	defer w.Close()
	if err := w.Measure(context.Background()); err != nil {
		t.Fatalf("Measure: %v", err)
	}
	return p
}

func TestNamesAreExported(t *testing.T) {
	fams := scrape(t, observeAll(t))
	names := metrics.Names()
	for _, name := range names {
		if len(fams[name].GetMetric()) == 0 {
			t.Errorf("%s is in Names but not exported", name)
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "rostrum_") && !slices.Contains(names, name) {
			t.Errorf("%s is exported but not in Names", name)
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(names) {
		t.Errorf("Names has duplicates: %v", names)
	}
}

// TestNamesFollowConventions runs Prometheus's own linter (base units,
// _total on counters only, snake case, help text) on rostrum's metrics.
func TestNamesFollowConventions(t *testing.T) {
	var own []*dto.MetricFamily
	for name, fam := range scrape(t, observeAll(t)) {
		if strings.HasPrefix(name, "rostrum_") {
			own = append(own, fam)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(own).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestNamesDocumented checks that the package documentation and
// docs/METRICS.md describe exactly the exported metrics.
func TestNamesDocumented(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join("..", "docs", "METRICS.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := metrics.Names()
	var table []string
	for _, line := range strings.Split(string(md), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok {
			if name, _, ok := strings.Cut(name, "`"); ok && strings.HasPrefix(name, "rostrum_") {
				table = append(table, name)
			}
		}
	}
	if !slices.Equal(table, names) {
		t.Errorf("docs/METRICS.md lists %v, want Names() %v", table, names)
	}
	for _, name := range names {
		if !strings.Contains(string(doc), "//\t"+name) {
			t.Errorf("doc.go does not describe %s", name)
		}
	}
}

func TestNamesReturnsACopy(t *testing.T) {
	n := metrics.Names()
	n[0] = "changed"
	if metrics.Names()[0] == "changed" {
		t.Error("Names returns a slice the caller can change")
	}
}
