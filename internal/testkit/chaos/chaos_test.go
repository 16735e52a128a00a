package chaos

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
	"github.com/rostrumhq/rostrum/processor"
)

// TestMain lets the test binary double as a processor process (Harness.Start).
func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

// chaosSize returns the size of one schedule: the number of meeting
// records and of faults, the seed and how long the trace is produced over
// (about as long as the faults take, so that they meet batches in flight).
// A short schedule by default (inside go test ./...), the full one with
// ROSTRUM_CHAOS=full (make chaos); ROSTRUM_CHAOS_SEED picks another seed.
// The schedule with the merge (share 1) is half the size of the one
// with the defaults (share 2).
func chaosSize(t *testing.T, share int) (records, steps int, seed uint64, spread time.Duration) {
	seed = 6
	if s := os.Getenv("ROSTRUM_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ROSTRUM_CHAOS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	if os.Getenv("ROSTRUM_CHAOS") == "full" {
		return 150000 * share, 50 * share, seed, time.Duration(share) * 2 * time.Minute
	}
	// 8 = every kind once; with share 2, once in each half.
	return 10000 * share, 8 * share, seed, time.Duration(share) * 16 * time.Second
}

// TestChaos streams a generated trace through processors running as child
// processes while a seeded schedule SIGKILLs them, adds and removes group
// members, pauses one until its partitions move and resumes it (a zombie),
// SIGKILLs redis-server and restarts it with and without its data, and
// fails and delays broker requests. At the end Redis, the output topic, the
// leaderboards, the settled periods and the DLQ must match the reference
// models: nothing lost, nothing applied twice (see the package
// documentation for how both are counted); and, in the full run, every kind
// of fault must have struck work in flight at least once in each schedule
// (Schedule.Hits).
//
// It runs two schedules: the processors as `rostrum run` runs them by
// default (the hysteresis with its dwell, grace, margin and timer; the
// state cache; the boards), then with --stability merge.
//
// The trace runs in two halves, and each meets every kind of fault, Redis
// data loss included. The first holds meeting records only; the second
// mixes in the board records. Board state is not idempotent: after a data
// loss each processor replays its own WAL into the boards, and a partition
// that moved between processors has its ranges in several WALs, replayed
// in any order; the boards record the offset ranges they applied, so every
// board record must still count once.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos skipped in -short mode")
	}
	full := os.Getenv("ROSTRUM_CHAOS") == "full"
	hits := map[Kind]int{}
	for _, sc := range []struct {
		name, stable string
		share        int
	}{{"defaults", processor.StabilityHysteresis, 2}, {"merge", processor.StabilityMerge, 1}, {"pipeline", processor.StabilityHysteresis, 1}} {
		t.Run(sc.name, func(t *testing.T) {
			run := runChaos
			if sc.name == "pipeline" {
				run = runPipelineChaos
			}
			got := run(t, sc.stable, sc.share)
			for k, n := range got {
				hits[k] += n
			}
			if full {
				requireHits(t, got, Join)
			}
		})
	}
	// A join strikes work in flight only when another process has a batch
	// in flight during the join's rebalance, 15–35% of joins; a schedule of
	// 7 or 8 joins misses every time in a few runs in a hundred, so joins
	// must strike over the whole full run instead.
	if full && hits[Join] == 0 {
		t.Errorf("no %q fault struck work in flight in any schedule", Join)
	}
	if !full {
		// The short schedules meet each kind only two or three times in
		// all: a kind may miss work in flight each time (a join while the
		// others are idle), so the short run reports what never hit and
		// the full run requires every kind to hit.
		for _, k := range Kinds {
			if hits[k] == 0 {
				t.Logf("no %q fault struck work in flight in the short schedules (the full run requires one)", k)
			}
		}
	}
}

// requireHits fails the test when a kind of fault, but those of except,
// never struck work in flight (Schedule.Hits).
func requireHits(t *testing.T, hits map[Kind]int, except ...Kind) {
	t.Helper()
	for _, k := range Kinds {
		if hits[k] == 0 && !slices.Contains(except, k) {
			t.Errorf("no %q fault struck work in flight", k)
		}
	}
}

// chaosSetup starts a schedule's redis-server and returns it with the
// configuration of its meeting trace, its number of faults and how long
// the trace is produced over (chaosSize).
func chaosSetup(t *testing.T, share int) (r *testenv.Redis, cfg trace.Config, steps int, spread time.Duration) {
	records, steps, seed, spread := chaosSize(t, share)
	// Append-only file with fsync always: a SIGKILLed server comes back with
	// every write it acknowledged (RedisKeep); Restart(false) deletes it
	// (RedisWipe).
	r = testenv.StartRedis(t, testenv.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	cfg = trace.DefaultConfig(seed)
	cfg.Records = records
	cfg.Rooms = 60
	cfg.MaxMembers = 200
	return r, cfg, steps, spread
}

// runChaos runs one schedule with the processors' stable strategy stable
// and returns how many faults of each kind struck work in flight.
func runChaos(t *testing.T, stable string, share int) map[Kind]int {
	r, cfg, steps, spread := chaosSetup(t, share)
	seed := cfg.Seed
	// Board events are at most 2 hours old when produced (boards.yaml says
	// why), 2 % of them 8 days old: late on every board.
	now := time.Now()
	bcfg := trace.BoardConfig{Seed: seed, Records: cfg.Records / 5, Now: now.UnixMilli(), Rooms: 60, Users: 80, Items: 12,
		ArrayRate: 0.3, IDRate: 0.35, RetryRate: 0.05, LateRate: 0.02, DecimalRate: 0.3,
		Cheaters: 4, CheatRate: 0.02, RemoveRate: 0.005, RemoveBoards: CheaterBoards}
	tr, split := Trace(cfg, &bcfg)
	// The decay boards' base moves at decayAt, while the processors run
	// and the board records (the second half) flow, before the faults end
	// (decay_chaos_test.go); Check compares them at the end, with the
	// other boards.
	decayAt := setDecayAt(t, now.Add(spread*3/4))
	boards, err := Boards()
	if err != nil {
		t.Fatal(err)
	}
	_, decay := SplitDecay(boards)
	h := New(t, []string{r.Addr}, tr, boards, stable)
	rc := r.Client()
	rebases := WatchRebases(r.Addr, EnvName, decay)

	start := time.Now()
	h.In.SettleFirst = start
	h.Start(0)
	sched := NewSchedule(h, r, seed)
	streamUnderFaults(t, h, sched, split, steps, spread)
	waitDecayBoundary(decayAt)
	h.WaitCaughtUp(5 * time.Minute)
	h.WaitRebuilt(func() (string, error) {
		return rc.Get(context.Background(), "rostrum:"+EnvName+":generation").Result()
	}, 2*time.Minute)
	h.WaitSettled(rc, time.Minute)
	// The decay boards as the faults left them, before the settlement's
	// Redis wipe rebuilds them from the WALs.
	checkDecayAfterFaults(t, rc, decay, h, sched, now, decayAt, rebases)

	// Settlement under faults (settle.go): the clock record closes every
	// period the trace counted; a processor is killed while they settle,
	// then Redis loses its data, then events for the settled periods
	// arrive.
	rebuilt := func() {
		h.WaitRebuilt(func() (string, error) {
			return rc.Get(context.Background(), "rostrum:"+EnvName+":generation").Result()
		}, 2*time.Minute)
	}
	h.ProduceClock(time.Now().Add(SettleAhead))
	sched.inject(ProcKill)
	h.WaitSettledRecords(time.Minute)
	sched.inject(RedisWipe)
	rebuilt()
	h.ProduceLate(LateAfterSettle(now))
	h.WaitCaughtUp(5 * time.Minute)
	rebuilt()
	h.WaitSettled(rc, time.Minute)
	for slot := range Slots {
		h.Stop(slot)
	}
	took := time.Since(start)
	seenRebases := rebases.Stop()

	outputs := h.Kafka.ReadAll(h.Topics.TopN)
	dlq := h.Kafka.ReadAll(h.Topics.DLQ)
	h.In.RemovalOrderLost = sched.Counts()[RedisWipe] > 0
	for _, f := range sched.Faults {
		if f.Kind == RedisWipe {
			h.In.Losses = append(h.In.Losses, f.Begin)
		}
	}
	rep, err := Check(context.Background(), rc, outputs, dlq, h.Kafka.ReadAll(h.Topics.Settled), h.Inputs(), h.In)
	if err != nil {
		t.Fatal(err)
	}
	// Expiry at chosen times: 5 hours on, item-trades' 6h window has
	// dropped the slices 2 hours old and older; a day on, its 24h window
	// has dropped everything; 7 days on, room-gifts-7d has too.
	var expired []board.ExpireResult
	for _, d := range []time.Duration{5 * time.Hour, 25 * time.Hour, 7*24*time.Hour + 6*time.Hour} {
		res, err := CheckExpiry(context.Background(), rc, h.In, now.Add(d), rep)
		if err != nil {
			t.Fatal(err)
		}
		expired = append(expired, res)
	}
	checkDecayBoards(t, rc, decay, now, seenRebases, rep)
	printFigures(t, h, sched, rep, seed, took, expired)
	if !rep.OK() {
		for _, p := range rep.Problems {
			t.Error(p)
		}
		t.Fatalf("lost %d, applied twice %d, moved %d, mismatched %d; processor logs in %s", rep.Lost, rep.AppliedTwice, rep.Moved, rep.Mismatch, h.LogDir())
	}
	if rep.BoardRemoves == 0 || rep.BoardDecimals == 0 {
		t.Fatalf("the trace had %d removes and %d values in tenths: the final check covered neither", rep.BoardRemoves, rep.BoardDecimals)
	}
	return sched.Hits()
}

// streamUnderFaults produces the harness's trace over spread, its two
// halves (split there) each while half of the schedule's steps run, then
// lets everything finish: every slot runs again (so that every WAL is
// applied to the current Redis generation).
func streamUnderFaults(t *testing.T, h *Harness, sched *Schedule, split, steps int, spread time.Duration) {
	t.Helper()
	produced := h.Produce(0, split, spread/2)
	sched.Run(steps / 2)
	if err := <-produced; err != nil {
		t.Fatalf("produce trace: %v", err)
	}
	produced = h.Produce(split, len(h.In.Trace), spread/2)
	sched.Run(steps - steps/2)
	if err := <-produced; err != nil {
		t.Fatalf("produce trace: %v", err)
	}
	for slot := range Slots {
		if h.Proc(slot) == nil {
			h.Start(slot)
		}
	}
}

// runPipelineChaos runs one schedule with the processors' batch pipeline
// on (--pipeline-batches), which boards turn off: so no boards here, only
// the meeting ranking, checked as in runChaos (nothing lost, nothing
// applied twice, every published list explained). It returns how many
// faults of each kind struck work in flight.
func runPipelineChaos(t *testing.T, stable string, share int) map[Kind]int {
	r, cfg, steps, spread := chaosSetup(t, share)
	seed := cfg.Seed
	tr, split := Trace(cfg, nil)
	h := New(t, []string{r.Addr}, tr, nil, stable)
	h.Pipeline = true
	rc := r.Client()

	start := time.Now()
	h.Start(0)
	sched := NewSchedule(h, r, seed)
	streamUnderFaults(t, h, sched, split, steps, spread)
	h.WaitCaughtUp(5 * time.Minute)
	h.WaitRebuilt(func() (string, error) {
		return rc.Get(context.Background(), "rostrum:"+EnvName+":generation").Result()
	}, 2*time.Minute)
	h.WaitSettled(rc, time.Minute)
	for slot := range Slots {
		h.Stop(slot)
	}
	took := time.Since(start)

	for _, f := range sched.Faults {
		if f.Kind == RedisWipe {
			h.In.Losses = append(h.In.Losses, f.Begin)
		}
	}
	rep, err := Check(context.Background(), rc, h.Kafka.ReadAll(h.Topics.TopN), h.Kafka.ReadAll(h.Topics.DLQ), nil, h.Inputs(), h.In)
	if err != nil {
		t.Fatal(err)
	}
	printFigures(t, h, sched, rep, seed, took, nil)
	overlapped := h.CountLog(OverlapLog)
	t.Logf("processes that prepared a batch while the one before was in stage 2: %d", overlapped)
	if overlapped == 0 {
		t.Error("no processor overlapped two batches: the schedule did not run the batch pipeline")
	}
	if !rep.OK() {
		for _, p := range rep.Problems {
			t.Error(p)
		}
		t.Fatalf("lost %d, applied twice %d, moved %d, mismatched %d; processor logs in %s", rep.Lost, rep.AppliedTwice, rep.Moved, rep.Mismatch, h.LogDir())
	}
	return sched.Hits()
}

func printFigures(t *testing.T, h *Harness, s *Schedule, rep *Report, seed uint64, took time.Duration, expired []board.ExpireResult) {
	events, bad := 0, 0
	for _, r := range h.In.Trace {
		events += len(r.Events)
		if !r.Good() {
			bad++
		}
	}
	mode := "--stability " + h.Stability
	if h.Pipeline {
		mode += " --pipeline-batches, no boards"
	}
	t.Logf("chaos seed %d, %s: %d records (%d events, %d bad), %d rooms, %d members (%d ranked at the end), %s",
		seed, mode, len(h.In.Trace), events, bad, rep.Rooms, rep.Members, rep.Ranked, took.Round(time.Second))
	counts, hits := s.Counts(), s.Hits()
	rec, idle := s.Recovery()
	t.Logf("faults: %d in all; processes started %d, stopped with a failing batch abandoned %d", len(s.Faults), h.starts, h.Abandoned)
	for _, k := range Kinds {
		line := fmt.Sprintf("  %-55s %3d, %3d hit work in flight", k, counts[k], hits[k])
		if ds := rec[k]; len(ds) > 0 {
			line += fmt.Sprintf("   recovery min %v, median %v, max %v", ds[0].Round(time.Millisecond),
				ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
		}
		if idle[k] > 0 {
			line += fmt.Sprintf(" (%d with nothing left to consume)", idle[k])
		}
		t.Log(line)
	}
	t.Logf("broker requests failed %d, delayed %d; stalled partitions nudged %d", s.BrokerFailed, s.BrokerDelayed, h.Nudges)
	t.Logf("processor logs: batch retries %d, Redis rebuilds %d, offset commits refused %d",
		h.CountLog("batch failed, retrying"), h.CountLog("redis rebuilt"), h.CountLog("offset commit failed"))
	t.Logf("outputs %d (%d rooms, %d identical repeats; %d shown members checked), DLQ %d (%d origins, %d repeats)",
		rep.Outputs, rep.OutputRooms, rep.Repeats, rep.Shown, rep.DLQ, rep.DLQDistinct, rep.DLQRepeats)
	t.Logf("boards: %d boards, %d records with board events (%d with a late one, %d removes, %d values in tenths), %d rankings, %d ranked members compared (%d removed members within bounds: Redis lost its data)",
		len(h.In.Boards), rep.BoardRecords, rep.BoardLate, rep.BoardRemoves, rep.BoardDecimals, rep.BoardRankings, rep.BoardEntries, rep.BoardBounded)
	t.Logf("settled: %d periods compared on the topic and in Redis (%d closed during the trace: uniqueness only), %d repeats on the topic",
		rep.SettledPeriods, len(h.In.SettleSkip), rep.SettledRepeats)
	for i, e := range expired {
		t.Logf("  expiry check %d: %d slice subtractions, %d members removed, %d slices deleted", i+1, e.Subtracted, e.Removed, e.Deleted)
	}
	t.Logf("seqs published twice with different contents in flight across a Redis data loss (known limit): %d", rep.InFlightRepeats)
	for _, l := range rep.InFlight {
		t.Logf("  %s", l)
	}
	t.Logf("lost %d", rep.Lost)
	t.Logf("applied twice %d", rep.AppliedTwice)
	t.Logf("slot moves %d, board mismatches %d", rep.Moved, rep.Mismatch)
	for _, f := range s.Faults {
		t.Logf("  %s +%v %s (%s)", f.Begin.Format("15:04:05.000"), f.End.Sub(f.Begin).Round(time.Millisecond), f.Kind, f.Detail)
	}
}
