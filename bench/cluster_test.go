package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// TestRunCluster runs every mode against a local three-master Redis
// Cluster and checks that the report splits Redis's work across the
// masters: each master ran some of every mode's commands (the rooms' hash
// tags spread over the slots), the masters' CPU adds up to the mode's, and
// the run leaves every master empty. It asserts no timings.
func TestRunCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster and runs the benchmark")
	}
	cl := testenv.StartRedisCluster(t)
	var progress bytes.Buffer
	rep, err := Run(context.Background(), Config{Events: 20000, Rooms: 200, Members: 20,
		Redis: strings.Join(cl.Addrs, ","), RateDuration: time.Second, RateWarmup: -1,
		NaiveDuration: time.Second, Progress: &progress})
	if err != nil {
		t.Fatalf("bench: %v\n%s", err, progress.String())
	}
	if len(rep.Problems) > 0 {
		t.Errorf("problems: %q", rep.Problems)
	}
	if len(rep.Machine.RedisMasters) != 3 {
		t.Fatalf("masters %q, want the cluster's 3", rep.Machine.RedisMasters)
	}
	for _, r := range rep.Results {
		if len(r.RedisNodes) != 3 {
			t.Errorf("%s: %d masters in the split, want 3", r.Mode, len(r.RedisNodes))
			continue
		}
		var cpu, share, cmds float64
		for i, n := range r.RedisNodes {
			if n.Addr != rep.Machine.RedisMasters[i] {
				t.Errorf("%s: master %d is %s, want %s", r.Mode, i, n.Addr, rep.Machine.RedisMasters[i])
			}
			if n.CommandsPerEvent <= 0 {
				t.Errorf("%s: master %s ran no commands: %+v", r.Mode, n.Addr, n)
			}
			cpu += n.CPUSecondsPerMEvents
			share += n.CPUShare
			cmds += n.CommandsPerEvent
		}
		if math.Abs(cpu-r.RedisCPUSecondsPerMEvents) > 1e-6*max(1, cpu) {
			t.Errorf("%s: the masters' CPU adds up to %v s/M events, the mode's is %v", r.Mode, cpu, r.RedisCPUSecondsPerMEvents)
		}
		if r.RedisCPUSecondsPerMEvents > 0 && math.Abs(share-1) > 1e-9 {
			t.Errorf("%s: CPU shares add up to %v, want 1", r.Mode, share)
		}
		if math.Abs(cmds-r.RedisCommandsPerEvent) > 1e-9*max(1, cmds) {
			t.Errorf("%s: the masters' commands add up to %v per event, the mode's is %v", r.Mode, cmds, r.RedisCommandsPerEvent)
		}
	}
	if ros := rep.result(ModeRostrum); ros == nil || ros.Events != 20000 || ros.RankedMembers <= 0 || ros.Published == 0 {
		t.Errorf("rostrum flat out: %+v", ros)
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	t.Logf("report:\n%s", out.String())
	if !strings.Contains(out.String(), "redis masters, rostrum: ") || !strings.Contains(out.String(), "Redis Cluster of 3 masters") {
		t.Errorf("the table shows no split across the masters:\n%s", out.String())
	}
	for i := range cl.Addrs {
		if n, err := cl.Node(i).Client().DBSize(context.Background()).Result(); err != nil || n != 0 {
			t.Errorf("master %s holds %d keys after the run (%v), want none", cl.Addrs[i], n, err)
		}
	}
}
