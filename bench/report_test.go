package bench

import (
	"math"
	"strings"
	"testing"
)

// A result's busy figures are CPU seconds per second: per-event CPU times
// the rate, the busiest master's for a cluster; the table shows Redis's.
func TestResultBusy(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	r := Result{Mode: modeRate, EventsPerSec: 64_000, RedisCPUSecondsPerMEvents: 12.5, ProcessorCPUSecondsPerMEvents: 12}
	r.setBusy()
	if !near(r.RedisBusy, 0.8) || !near(r.ProcessorCores, 0.768) {
		t.Errorf("one node: redis busy %v, processor cores %v; want 0.8 and 0.768", r.RedisBusy, r.ProcessorCores)
	}
	r.RedisNodes = []RedisNode{{CPUSecondsPerMEvents: 3}, {CPUSecondsPerMEvents: 6}, {CPUSecondsPerMEvents: 3.5}}
	r.setBusy()
	if !near(r.RedisBusy, 0.384) {
		t.Errorf("cluster: redis busy %v, want the busiest master's 0.384", r.RedisBusy)
	}
	rep := Report{Results: []Result{r}}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "redis busy") || !strings.Contains(b.String(), "0.38") {
		t.Errorf("the table shows no Redis busy figure:\n%s", b.String())
	}
}
