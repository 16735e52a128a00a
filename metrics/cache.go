package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// StateCache is what the sink's state cache reports (sink.CacheStats): the
// member states it holds and its room applies by path.
type StateCache struct {
	Members int
	// Merged: written with the stable step in the same script; Fast:
	// written, stable list stored apart; Loaded: rooms read before they
	// could be planned (not cached, or a stale plan redone); Stale: plans
	// that Redis refused because another write came first (each is also
	// counted in Loaded).
	Merged, Fast, Loaded, Stale int64
}

// WatchStateCache exports the state cache's figures, read by read at each
// scrape: rostrum_state_cache_members and
// rostrum_state_cache_applies_total{path}. Call it once.
func (p *Processor) WatchStateCache(read func() StateCache) {
	p.labeled.MustRegister(&cacheCollector{read: read})
}

var (
	descCacheMembers = prometheus.NewDesc(nameCacheMembers,
		"Member states held by the sink's state cache, from which a room apply is planned in the processor.", nil, nil)
	descCacheApplies = prometheus.NewDesc(nameCacheApplies,
		"Room applies by path: merged (stable list stored in the same script), fast (stable list stored apart), loaded (room read first: not cached or a stale plan redone), stale (plans Redis refused because another write came first; also counted in loaded).",
		[]string{"path"}, nil)
)

type cacheCollector struct {
	mu   sync.Mutex
	read func() StateCache
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCacheMembers
	ch <- descCacheApplies
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s := c.read()
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(descCacheMembers, prometheus.GaugeValue, float64(s.Members))
	for _, v := range []struct {
		path string
		n    int64
	}{{"merged", s.Merged}, {"fast", s.Fast}, {"loaded", s.Loaded}, {"stale", s.Stale}} {
		ch <- prometheus.MustNewConstMetric(descCacheApplies, prometheus.CounterValue, float64(v.n), v.path)
	}
}
