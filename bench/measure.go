package bench

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// roundTrips counts what a go-redis client sends: every pipeline and every
// single command is one round trip. A new connection's handshake (HELLO,
// CLIENT SETINFO) is counted as a dial, not as a round trip. Add it to a
// client with AddHook.
type roundTrips struct {
	trips, cmds, dials atomic.Int64
}

var _ redis.Hook = (*roundTrips)(nil)

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.dials.Add(1)
		return next(ctx, network, addr)
	}
}

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd) {
			h.trips.Add(1)
			h.cmds.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || !handshake(cmds[0]) {
			h.trips.Add(1)
			h.cmds.Add(int64(len(cmds)))
		}
		return next(ctx, cmds)
	}
}

// handshake reports whether cmd is part of go-redis's connection set-up.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select":
		return true
	case "client":
		args := cmd.Args()
		return len(args) > 1 && strings.EqualFold(fmt.Sprint(args[1]), "setinfo")
	}
	return false
}

// redisInfo is what a run reads from Redis's INFO.
type redisInfo struct {
	commands   int64            // total_commands_processed, commands inside scripts included
	usedMemory int64            // used_memory, bytes
	cpu        float64          // used_cpu_user + used_cpu_sys, seconds
	calls      map[string]int64 // commandstats: command → calls
	version    string
}

func readInfo(ctx context.Context, c *redis.Client) (redisInfo, error) {
	text, err := c.Info(ctx, "server", "stats", "memory", "cpu", "commandstats").Result()
	if err != nil {
		return redisInfo{}, fmt.Errorf("bench: redis INFO: %w", err)
	}
	in := redisInfo{calls: map[string]int64{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch {
		case k == "total_commands_processed":
			in.commands, _ = strconv.ParseInt(v, 10, 64)
		case k == "used_memory":
			in.usedMemory, _ = strconv.ParseInt(v, 10, 64)
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, _ := strconv.ParseFloat(v, 64)
			in.cpu += f
		case k == "redis_version":
			in.version = v
		case strings.HasPrefix(k, "cmdstat_"):
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			in.calls[strings.TrimPrefix(k, "cmdstat_")], _ = strconv.ParseInt(calls, 10, 64)
		}
	}
	return in, nil
}

// snapshot is the counters a measurement window starts or ends with.
type snapshot struct {
	mallocs, allocBytes uint64
	cpu                 time.Duration // this process: user + system
	redis               redisInfo     // summed over the masters
	nodes               []redisInfo   // each master's (a cluster's split)
	trips, cmds, dials  int64
}

// meter measures one mode's window: the process's allocations and CPU,
// Redis's commands, CPU and memory (through admin, a client the measured
// code does not use), and the round trips of the measured client (hook).
type meter struct {
	admin *redisNodes
	hook  *roundTrips
}

func (m meter) snap(ctx context.Context) (snapshot, error) {
	var s snapshot
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.mallocs, s.allocBytes = ms.Mallocs, ms.TotalAlloc
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		s.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if m.hook != nil {
		s.trips, s.cmds, s.dials = m.hook.trips.Load(), m.hook.cmds.Load(), m.hook.dials.Load()
	}
	var err error
	s.redis, s.nodes, err = m.admin.info(ctx)
	return s, err
}

// fillNodes sets r's split of Redis's work across a cluster's masters.
func (m meter) fillNodes(r *Result, a, b snapshot) {
	if m.admin.cluster == nil || r.Events == 0 {
		return
	}
	r.RedisNodes = nodeShares(m.admin.addrs(), a.nodes, b.nodes, float64(r.Events))
	// Each master counts the INFO of snapshot a, not only one node.
	cmds := b.redis.commands - a.redis.commands - int64(len(b.nodes))
	r.RedisCommandsPerEvent = float64(cmds) / float64(r.Events)
	if r.Batches > 0 {
		r.RedisCommandsPerBatch = float64(cmds) / float64(r.Batches)
	}
}

// fill sets r's per-event costs from the window [a, b] in which r.Events
// events were handled. batches is the number of batches (0: none).
func fill(r *Result, a, b snapshot, batches int64) {
	ev := float64(r.Events)
	if ev == 0 {
		return
	}
	// The INFO that took snapshot a counts in b's total.
	cmds := b.redis.commands - a.redis.commands - 1
	r.RedisCommandsPerEvent = float64(cmds) / ev
	r.ClientCommandsPerEvent = float64(b.cmds-a.cmds) / ev
	r.RoundTrips = b.trips - a.trips
	r.Dials = b.dials - a.dials
	r.AllocsPerEvent = float64(b.mallocs-a.mallocs) / ev
	r.BytesPerEvent = float64(b.allocBytes-a.allocBytes) / ev
	r.CPUSecondsPerMEvents = (b.cpu - a.cpu).Seconds() / ev * 1e6
	r.RedisCPUSecondsPerMEvents = (b.redis.cpu - a.redis.cpu) / ev * 1e6
	if batches > 0 {
		r.Batches = batches
		r.RoundTripsPerBatch = float64(r.RoundTrips) / float64(batches)
		r.RedisCommandsPerBatch = float64(cmds) / float64(batches)
		r.EventsPerBatch = ev / float64(batches)
	}
	r.Commands = map[string]int64{}
	for k, v := range b.redis.calls {
		if d := v - a.redis.calls[k]; d > 0 && k != "info" {
			r.Commands[k] = d
		}
	}
}

// rankedMembers returns the total ZCARD of keys.
func rankedMembers(ctx context.Context, c redis.UniversalClient, keys []string) (int64, error) {
	var n int64
	for len(keys) > 0 {
		chunk := keys[:min(len(keys), 1000)]
		keys = keys[len(chunk):]
		p := c.Pipeline()
		cmds := make([]*redis.IntCmd, len(chunk))
		for i, k := range chunk {
			cmds[i] = p.ZCard(ctx, k)
		}
		if _, err := p.Exec(ctx); err != nil {
			return 0, fmt.Errorf("bench: ZCARD: %w", err)
		}
		for _, c := range cmds {
			n += c.Val()
		}
	}
	return n, nil
}

// keyKinds groups every key of Redis (of every master) by what follows its
// last '}' (the room hash tag: ":z", ":m", …) and estimates each group's
// memory from MEMORY USAGE of up to 200 keys of the group.
func keyKinds(ctx context.Context, rn *redisNodes) (map[string]KeyKind, error) {
	const sample = 200
	kinds := map[string]KeyKind{}
	type key struct {
		c    *redis.Client // the master that holds it
		name string
	}
	samples := map[string][]key{}
	for _, c := range rn.nodes {
		iter := c.Scan(ctx, 0, "*", 5000).Iterator()
		for iter.Next(ctx) {
			k := iter.Val()
			kind := k
			if i := strings.LastIndexByte(k, '}'); i >= 0 {
				kind = k[i+1:]
			}
			kk := kinds[kind]
			kk.Keys++
			kinds[kind] = kk
			if len(samples[kind]) < sample {
				samples[kind] = append(samples[kind], key{c, k})
			}
		}
		if err := iter.Err(); err != nil {
			return nil, fmt.Errorf("bench: SCAN %s: %w", c.Options().Addr, err)
		}
	}
	for kind, keys := range samples {
		cmds := make([]*redis.IntCmd, len(keys))
		pipes := map[*redis.Client]redis.Pipeliner{}
		for i, k := range keys {
			p := pipes[k.c]
			if p == nil {
				p = k.c.Pipeline()
				pipes[k.c] = p
			}
			cmds[i] = p.MemoryUsage(ctx, k.name, 0)
		}
		for _, p := range pipes {
			if _, err := p.Exec(ctx); err != nil {
				return nil, fmt.Errorf("bench: MEMORY USAGE: %w", err)
			}
		}
		var sum int64
		for _, c := range cmds {
			sum += c.Val()
		}
		kk := kinds[kind]
		kk.BytesPerKey = float64(sum) / float64(len(keys))
		kinds[kind] = kk
	}
	return kinds, nil
}

// dirBytes returns the total size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// machine describes the computer the benchmark runs on.
func machine(redisVersion string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Redis: redisVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				m.Revision = s.Value[:min(12, len(s.Value))]
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && m.Revision != "" {
			m.Revision += "+dirty"
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
