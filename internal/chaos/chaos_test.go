package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testenv"
	"github.com/rostrumhq/rostrum/internal/trace"
)

// TestMain lets the test binary double as a processor process (Harness.Start).
func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

// chaosSize returns the trace length and the number of faults: a short
// schedule by default (inside go test ./...), the full one with
// ROSTRUM_CHAOS=full (make chaos). ROSTRUM_CHAOS_SEED picks another seed.
func chaosSize(t *testing.T) (records, steps int, seed uint64, spread time.Duration) {
	seed = 6
	if s := os.Getenv("ROSTRUM_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ROSTRUM_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	if os.Getenv("ROSTRUM_CHAOS") == "full" {
		return 300000, 100, seed, 4 * time.Minute
	}
	return 30000, 10, seed, 20 * time.Second
}

// TestChaos streams a generated trace through processors running as child
// processes while a seeded schedule SIGKILLs them, adds and removes group
// members, pauses one until its partitions move and resumes it (a zombie),
// SIGKILLs redis-server and restarts it with and without its data, and
// fails and delays broker requests. At the end Redis, the output topic and
// the DLQ must match the reference model: nothing lost, nothing applied
// twice (see the package documentation for how both are counted).
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos skipped in -short mode")
	}
	records, steps, seed, spread := chaosSize(t)
	// Append-only file with fsync always: a SIGKILLed server comes back with
	// every write it acknowledged (RedisKeep); Restart(false) deletes it
	// (RedisWipe).
	r := testenv.StartRedis(t, testenv.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	cfg := trace.DefaultConfig(seed)
	cfg.Records = records
	cfg.Rooms = 60
	cfg.MaxMembers = 200
	h := New(t, []string{r.Addr}, cfg)
	rc := r.Client()

	start := time.Now()
	h.Start(0)
	produced := h.Produce(spread)
	sched := NewSchedule(h, r, seed)
	sched.Run(steps)

	// Let everything finish: every slot runs (so that every WAL is applied
	// to the current Redis generation), the group catches up.
	if err := <-produced; err != nil {
		t.Fatalf("produce trace: %v", err)
	}
	for slot := range Slots {
		if h.Proc(slot) == nil {
			h.Start(slot)
		}
	}
	h.WaitCaughtUp(5 * time.Minute)
	h.WaitRebuilt(func() (string, error) {
		return rc.Get(context.Background(), "rostrum:"+EnvName+":generation").Result()
	}, 2*time.Minute)
	for slot := range Slots {
		h.Stop(slot)
	}
	took := time.Since(start)

	outputs := h.Kafka.ReadAll(h.Topics.TopN)
	dlq := h.Kafka.ReadAll(h.Topics.DLQ)
	rep, err := Check(context.Background(), rc, outputs, dlq, h.In)
	if err != nil {
		t.Fatal(err)
	}
	printFigures(t, h, sched, rep, seed, took)
	if !rep.OK() {
		for _, p := range rep.Problems {
			t.Error(p)
		}
		t.Fatalf("lost %d, applied twice %d, moved %d; processor logs in %s", rep.Lost, rep.AppliedTwice, rep.Moved, h.LogDir())
	}
}

func printFigures(t *testing.T, h *Harness, s *Schedule, rep *Report, seed uint64, took time.Duration) {
	events, bad := 0, 0
	for _, r := range h.In.Trace {
		events += len(r.Events)
		if !r.Good() {
			bad++
		}
	}
	t.Logf("chaos seed %d: %d records (%d events, %d bad), %d rooms, %d members (%d ranked at the end), %s",
		seed, len(h.In.Trace), events, bad, rep.Rooms, rep.Members, rep.Ranked, took.Round(time.Second))
	counts := s.Counts()
	rec, idle := s.Recovery()
	t.Logf("faults: %d in all; processes started %d", len(s.Faults), h.starts)
	for _, k := range Kinds {
		line := fmt.Sprintf("  %-55s %3d", k, counts[k])
		if ds := rec[k]; len(ds) > 0 {
			line += fmt.Sprintf("   recovery min %v, median %v, max %v", ds[0].Round(time.Millisecond),
				ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
		}
		if idle[k] > 0 {
			line += fmt.Sprintf(" (%d with nothing left to consume)", idle[k])
		}
		t.Log(line)
	}
	t.Logf("broker requests failed %d, delayed %d", s.BrokerFailed, s.BrokerDelayed)
	t.Logf("processor logs: batch retries %d, Redis rebuilds %d, offset commits refused %d",
		h.CountLog("batch failed, retrying"), h.CountLog("redis rebuilt"), h.CountLog("offset commit failed"))
	t.Logf("outputs %d (%d rooms, %d identical repeats), DLQ %d (%d distinct)",
		rep.Outputs, rep.OutputRooms, rep.Repeats, rep.DLQ, rep.DLQDistinct)
	t.Logf("lost %d", rep.Lost)
	t.Logf("applied twice %d", rep.AppliedTwice)
	t.Logf("slot moves %d", rep.Moved)
	for _, f := range s.Faults {
		t.Logf("  %s +%v %s (%s)", f.Begin.Format("15:04:05.000"), f.End.Sub(f.Begin).Round(time.Millisecond), f.Kind, f.Detail)
	}
}
