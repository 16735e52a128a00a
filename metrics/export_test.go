package metrics

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// LagWatcher lets the tests take single lag measurements, as WatchLag does on
// each tick.
type LagWatcher struct{ w *lagWatcher }

// NewLagWatcher returns a watcher of group's lag on topics; Close it.
func (p *Processor) NewLagWatcher(cl *kgo.Client, group string, topics []string) LagWatcher {
	return LagWatcher{p.newLagWatcher(cl, group, topics)}
}

// Measure takes one measurement and updates the gauges.
func (w LagWatcher) Measure(ctx context.Context) error { return w.w.measure(ctx) }

// Close closes the watcher's record reader.
func (w LagWatcher) Close() { w.w.close() }
