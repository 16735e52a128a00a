package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/pprof"

	"github.com/google/pprof/profile"
)

// The bench runs the processor, the in-process broker and the load
// producer in one process, so getrusage alone cannot say what the
// processor costs. Each of them runs under a pprof goroutine label
// (labelRole), which the goroutines they start inherit, and a CPU profile
// of the measured window splits the process's CPU by label. Samples with
// no label (the garbage collector's workers, the scheduler, and Kafka
// client connection goroutines that franz-go starts from goroutines of its
// own) are given to the roles in proportion to their labelled samples, so
// the processor's figure is an attribution, not a measurement of its own
// process: it can be off by the unlabelled share, which the profile shows
// (go tool pprof -tags).
const labelRole = "rostrum_bench_role"

// The roles of the bench's goroutines.
const (
	roleProcessor = "processor"
	roleBroker    = "broker"
	roleLoad      = "load" // the load producer and the bench's own loop
)

// withRole runs f with the current goroutine labelled role, restoring its
// labels afterwards; goroutines f starts keep the label.
func withRole(ctx context.Context, role string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels(labelRole, role), f)
}

// cpuShares profiles the CPU while the returned stop function is not
// called, also writing the profile to user when it is not nil, and returns
// from stop each role's share of the process's CPU.
func cpuShares(user io.Writer) (stop func() (map[string]float64, error), err error) {
	var buf bytes.Buffer
	w := io.Writer(&buf)
	if user != nil {
		w = io.MultiWriter(&buf, user)
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %w", err)
	}
	stopped := false
	return func() (map[string]float64, error) {
		if !stopped {
			pprof.StopCPUProfile()
			stopped = true
		}
		return sharesOf(&buf)
	}, nil
}

// sharesOf reads a CPU profile and returns each role's share of its CPU
// time, the unlabelled samples spread in proportion.
func sharesOf(r io.Reader) (map[string]float64, error) {
	p, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("bench: CPU profile: %w", err)
	}
	cpu := len(p.SampleType) - 1 // cpu nanoseconds, after the sample count
	by := map[string]float64{}
	var labelled, total float64
	for _, s := range p.Sample {
		v := float64(s.Value[cpu])
		total += v
		if roles := s.Label[labelRole]; len(roles) == 1 {
			by[roles[0]] += v
			labelled += v
		}
	}
	if labelled == 0 {
		return nil, nil
	}
	for role, v := range by {
		by[role] = v / labelled // as if every sample were labelled
	}
	return by, nil
}
