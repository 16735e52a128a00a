package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// The Redis a run uses: one node, or a Redis Cluster when Config.Redis names
// several addresses (as `rostrum run --redis` decides). The measured clients
// of a cluster are go-redis ClusterClients; the counters (INFO, FLUSHALL,
// SCAN, MEMORY USAGE) are read from every master on its own, through clients
// the measured code never uses, so the report can split Redis's CPU and
// commands across the masters.

// redisNodes is the admin side of a run's Redis: one client per master.
type redisNodes struct {
	cluster *redis.ClusterClient // nil for a single node; owns the node clients
	nodes   []*redis.Client      // one per master, in address order
	data    redis.UniversalClient
}

// connectRedis opens the admin clients of addrs (one address: a single node;
// several: the seeds of a Redis Cluster, whose masters it discovers) with
// the connection settings o (Addr unused).
func connectRedis(ctx context.Context, addrs []string, o redis.Options) (*redisNodes, error) {
	if len(addrs) == 1 {
		o.Addr = addrs[0]
		c := redis.NewClient(&o)
		return &redisNodes{nodes: []*redis.Client{c}, data: c}, nil
	}
	cc := redis.NewClusterClient(clusterOptions(addrs, o, 0))
	rn := &redisNodes{cluster: cc, data: cc}
	var mu sync.Mutex
	// The node clients belong to cc: they follow no redirects, which is
	// what per-node INFO, FLUSHALL and SCAN need.
	err := cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		rn.nodes = append(rn.nodes, c)
		return nil
	})
	if err != nil {
		_ = cc.Close()
		return nil, fmt.Errorf("bench: --redis %s: the cluster's masters: %w", strings.Join(addrs, ","), err)
	}
	slices.SortFunc(rn.nodes, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	return rn, nil
}

// clusterOptions are the options of a cluster client seeded with addrs,
// with o's credentials, TLS and dialer.
func clusterOptions(addrs []string, o redis.Options, poolSize int) *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: addrs, Username: o.Username, Password: o.Password,
		TLSConfig: o.TLSConfig, Dialer: o.Dialer, PoolSize: poolSize}
}

func (rn *redisNodes) close() {
	if rn.cluster != nil {
		_ = rn.cluster.Close()
		return
	}
	_ = rn.nodes[0].Close()
}

// addrs returns the masters' addresses, in node order.
func (rn *redisNodes) addrs() []string {
	a := make([]string, len(rn.nodes))
	for i, c := range rn.nodes {
		a[i] = c.Options().Addr
	}
	return a
}

// dbSize returns the number of keys over every master.
func (rn *redisNodes) dbSize(ctx context.Context) (int64, error) {
	var n int64
	for _, c := range rn.nodes {
		k, err := c.DBSize(ctx).Result()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", c.Options().Addr, err)
		}
		n += k
	}
	return n, nil
}

// flushAll deletes every key of every master.
func (rn *redisNodes) flushAll(ctx context.Context) error {
	for _, c := range rn.nodes {
		if err := c.FlushAll(ctx).Err(); err != nil {
			return fmt.Errorf("bench: FLUSHALL %s: %w", c.Options().Addr, err)
		}
	}
	return nil
}

// info reads INFO of every master: their sum, and each master's own.
func (rn *redisNodes) info(ctx context.Context) (redisInfo, []redisInfo, error) {
	sum := redisInfo{calls: map[string]int64{}}
	per := make([]redisInfo, len(rn.nodes))
	for i, c := range rn.nodes {
		in, err := readInfo(ctx, c)
		if err != nil {
			return redisInfo{}, nil, err
		}
		per[i] = in
		sum.commands += in.commands
		sum.usedMemory += in.usedMemory
		sum.cpu += in.cpu
		for k, v := range in.calls {
			sum.calls[k] += v
		}
		if sum.version == "" {
			sum.version = in.version
		}
	}
	return sum, per, nil
}

// RedisNode is one Redis Cluster master's share of a mode's Redis work
// (Result.RedisNodes, runs against a cluster only).
type RedisNode struct {
	Addr string `json:"addr"`
	// CPUSecondsPerMEvents is this master's used_cpu_user + used_cpu_sys
	// during the window, per million events of the mode (all events, not
	// only the master's); the masters' figures add up to the mode's
	// RedisCPUSecondsPerMEvents.
	CPUSecondsPerMEvents float64 `json:"cpu_seconds_per_m_events"`
	// CPUShare is this master's part of the masters' CPU, in [0, 1].
	CPUShare float64 `json:"cpu_share"`
	// CommandsPerEvent is this master's total_commands_processed delta
	// (commands inside scripts included) per event of the mode.
	CommandsPerEvent float64 `json:"commands_per_event"`
}

// nodeShares splits the window [a, b] of ev events across the masters.
func nodeShares(addrs []string, a, b []redisInfo, ev float64) []RedisNode {
	var total float64
	for i := range b {
		total += b[i].cpu - a[i].cpu
	}
	out := make([]RedisNode, len(b))
	for i := range b {
		cpu := b[i].cpu - a[i].cpu
		out[i] = RedisNode{Addr: addrs[i], CPUSecondsPerMEvents: cpu / ev * 1e6,
			// The INFO that took snapshot a counts in b's total.
			CommandsPerEvent: float64(b[i].commands-a[i].commands-1) / ev}
		if total > 0 {
			out[i].CPUShare = cpu / total
		}
	}
	return out
}
