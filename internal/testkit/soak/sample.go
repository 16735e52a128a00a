package soak

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Sample is one observation of the running system.
type Sample struct {
	At time.Duration // since the soak began

	ProcRSS        float64 // bytes, summed over the running processors
	ProcGoroutines float64 // summed over the running processors
	ProcOpenFiles  float64 // summed over the running processors
	Procs          int     // processors running (and scraped)
	GatewayRSS     float64 // bytes
	GatewayGor     float64
	GatewayFiles   float64
	RedisMemory    float64 // used_memory, bytes
	WALBytes       float64 // summed over the slots' WAL directories
	Lag            float64 // records of the input topics not yet committed by the group; NaN when not known (a rebalance)
	Accepted       float64 // records answered 2xx so far
}

// Metric is one column of the samples that must stay flat after the
// warm-up.
type Metric struct {
	Name  string
	Unit  string
	Value func(Sample) float64
	// Floor is the drift (slope × the window after the warm-up) below
	// which a metric counts as flat whatever its mean: a sawtooth of WAL
	// segments, a lag that is a few batches, a goroutine per connection.
	Floor float64
	// Baseline fits the line to each minute's smallest sample instead of
	// every sample: the lag jumps after each processor SIGKILL (the
	// killed member's partitions wait out its session timeout, 45 s)
	// and what must stay flat is the level it comes back to.
	Baseline bool
}

// Metrics are the figures a soak checks for flatness. A metric is flat
// when its least-squares slope after the warm-up, times the length of
// that window (its drift), is at most MaxDrift of its mean over the
// window, or at most its Floor. Only growth counts against it: a figure
// that falls after the warm-up (a backlog draining, memory returned) leaks
// nothing.
var Metrics = []Metric{
	{"processor RSS (mean)", "MiB", func(s Sample) float64 { return perProc(s, s.ProcRSS) / (1 << 20) }, 16, false},
	{"processor goroutines (mean)", "", func(s Sample) float64 { return perProc(s, s.ProcGoroutines) }, 20, false},
	{"processor open files (mean)", "", func(s Sample) float64 { return perProc(s, s.ProcOpenFiles) }, 5, false},
	{"gateway RSS", "MiB", func(s Sample) float64 { return s.GatewayRSS / (1 << 20) }, 16, false},
	{"gateway goroutines", "", func(s Sample) float64 { return s.GatewayGor }, 30, false},
	{"gateway open files", "", func(s Sample) float64 { return s.GatewayFiles }, 10, false},
	{"redis used memory", "MiB", func(s Sample) float64 { return s.RedisMemory / (1 << 20) }, 8, false},
	// Three WALs of 4 MiB segments (walSegmentBytes), pruned a whole
	// segment at a time once it is older than the retention: a sawtooth
	// of a few segments per slot.
	{"WAL size", "MiB", func(s Sample) float64 { return s.WALBytes / (1 << 20) }, 64, false},
	{"consumer lag", "records", func(s Sample) float64 { return s.Lag }, 5000, true},
}

// perProc returns the mean over the processors sampled: a sum would step
// with every kill and restart.
func perProc(s Sample, sum float64) float64 {
	if s.Procs == 0 {
		return 0
	}
	return sum / float64(s.Procs)
}

// MaxDrift is the share of its mean a metric may drift over the window
// after the warm-up.
const MaxDrift = 0.10

// Slope is the flatness verdict of one metric.
type Slope struct {
	Metric  Metric
	PerHour float64 // least-squares slope, units per hour
	Mean    float64 // over the window
	Drift   float64 // PerHour × the window's length
	Flat    bool
}

// Slopes fits a line to each metric over the samples at or after warmup
// (samples with no processor scraped are left out of the processor
// metrics) and judges it.
func Slopes(samples []Sample, warmup time.Duration) []Slope {
	var out []Slope
	for _, m := range Metrics {
		var xs, ys []float64
		minute := -1
		for _, s := range samples {
			v := m.Value(s)
			if s.At < warmup || math.IsNaN(v) || (s.Procs == 0 && strings.HasPrefix(m.Name, "processor")) {
				continue
			}
			if m.Baseline {
				if b := int((s.At - warmup) / time.Minute); b == minute {
					if v < ys[len(ys)-1] {
						xs[len(xs)-1], ys[len(ys)-1] = s.At.Hours(), v
					}
					continue
				} else {
					minute = b
				}
			}
			xs = append(xs, s.At.Hours())
			ys = append(ys, v)
		}
		sl := Slope{Metric: m}
		if len(xs) >= 2 {
			sl.PerHour, sl.Mean = LeastSquares(xs, ys)
			sl.Drift = sl.PerHour * (xs[len(xs)-1] - xs[0])
		}
		sl.Flat = len(xs) >= 2 && (sl.Drift <= MaxDrift*math.Abs(sl.Mean) || sl.Drift <= m.Floor)
		out = append(out, sl)
	}
	return out
}

// LeastSquares returns the slope of the least-squares line through the
// points (xs[i], ys[i]) and the mean of ys. The slope is 0 when every x is
// the same.
func LeastSquares(xs, ys []float64) (slope, mean float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var num, den float64
	for i := range xs {
		num += (xs[i] - mx) * (ys[i] - my)
		den += (xs[i] - mx) * (xs[i] - mx)
	}
	if den == 0 {
		return 0, my
	}
	return num / den, my
}

// WriteCSV writes the samples with a header row; times in seconds, sizes
// in bytes.
func WriteCSV(w io.Writer, samples []Sample) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"seconds", "processors", "processor_rss_bytes", "processor_goroutines", "processor_open_fds",
		"gateway_rss_bytes", "gateway_goroutines", "gateway_open_fds", "redis_used_memory_bytes", "wal_bytes",
		"lag_records", "accepted_records"})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	for _, s := range samples {
		_ = cw.Write([]string{f(s.At.Seconds()), strconv.Itoa(s.Procs), f(s.ProcRSS), f(s.ProcGoroutines), f(s.ProcOpenFiles),
			f(s.GatewayRSS), f(s.GatewayGor), f(s.GatewayFiles), f(s.RedisMemory), f(s.WALBytes), f(s.Lag), f(s.Accepted)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("soak: write samples: %w", err)
	}
	return nil
}
