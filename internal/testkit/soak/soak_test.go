package soak

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/chaos"
	"github.com/rostrumhq/rostrum/internal/testkit/model"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// settings are the soak's knobs, from the environment (make soak sets
// them).
type settings struct {
	run         time.Duration // ROSTRUM_SOAK_MINUTES: the paced run after the calibration (short run: 45s)
	warmup      time.Duration // the first fifth of the run
	faultEvery  time.Duration // ROSTRUM_SOAK_FAULT_EVERY, default min(3m, run/4)
	sampleEvery time.Duration // run/180 within [2s, 10s]
	calibrate   time.Duration // ROSTRUM_SOAK_CALIBRATE, default 20s (short run: 10s)
	csv, chart  string        // ROSTRUM_SOAK_CSV, ROSTRUM_SOAK_CHART: where to write them ("" none)
	maxRecords  float64       // ROSTRUM_SOAK_MAX_RECORDS, default maxRecords: the most the run offers
	judge       bool          // whether the slopes are judged: a run of at least judgeAfter
}

const (
	// shortRun is the run when ROSTRUM_SOAK_MINUTES is not set: the soak
	// that go test ./... (make test) runs, with a fault of each kind.
	shortRun = 45 * time.Second
	// judgeAfter is the shortest run whose slopes are judged: over a
	// shorter window one fault's step or a backlog draining weighs as much
	// as a leak, and the verdicts are noise. A shorter run reports them.
	judgeAfter = 10 * time.Minute
	// maxRun is the longest run: the decay boards' base moves every 3
	// hours and item-trades' 6h window drops the oldest of the soak's
	// board events about 3 hours after it starts (internal/testkit/chaos/boards.yaml),
	// where the final check stops being exact.
	maxRun = 150 * time.Minute
	// maxRecords caps the records a run offers: the oracle holds every
	// record it sent, kfake every record of the topics, and the final
	// check reads them all back, about 3.5 KB a record at its peak (a
	// 30-minute run at 3,700 records/s, 6.7 million, took the test process
	// past 23 GB). The run offers min(half the flat-out rate,
	// maxRecords/run).
	maxRecords = 2_000_000
)

func readSettings(t *testing.T) settings {
	s := settings{run: shortRun, calibrate: 10 * time.Second, maxRecords: maxRecords,
		csv: os.Getenv("ROSTRUM_SOAK_CSV"), chart: os.Getenv("ROSTRUM_SOAK_CHART")}
	if v := os.Getenv("ROSTRUM_SOAK_MAX_RECORDS"); v != "" {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			t.Fatalf("ROSTRUM_SOAK_MAX_RECORDS=%q: want a positive number of records", v)
		}
		s.maxRecords = n
	}
	if v := os.Getenv("ROSTRUM_SOAK_MINUTES"); v != "" {
		mins, err := strconv.ParseFloat(v, 64)
		if err != nil || mins <= 0 || mins > maxRun.Minutes() {
			t.Fatalf("ROSTRUM_SOAK_MINUTES=%q: want a number of minutes above 0 and at most %g", v, maxRun.Minutes())
		}
		s.run, s.calibrate = time.Duration(mins*float64(time.Minute)), 20*time.Second
	} else if testing.Short() {
		t.Skip("the short soak is skipped in -short mode (go test ./internal/soak runs it, make soak the long one)")
	}
	s.judge = s.run >= judgeAfter
	s.warmup = s.run / 5
	s.faultEvery = min(3*time.Minute, s.run/4)
	s.sampleEvery = min(max(s.run/180, 2*time.Second), 10*time.Second)
	for _, d := range []struct {
		env string
		dst *time.Duration
	}{{"ROSTRUM_SOAK_FAULT_EVERY", &s.faultEvery}, {"ROSTRUM_SOAK_CALIBRATE", &s.calibrate}} {
		if v := os.Getenv(d.env); v != "" {
			var err error
			if *d.dst, err = time.ParseDuration(v); err != nil || *d.dst <= 0 {
				t.Fatalf("%s=%q: want a positive duration (90s, 3m)", d.env, v)
			}
		}
	}
	return s
}

const (
	env   = chaos.EnvName
	group = "rostrum-" + env
	slots = 3
	// walMaxAge is the processors' WAL retention in the soak: short, so
	// that the WAL reaches its steady size (retention prunes as fast as
	// batches are appended) well inside the warm-up. With the default 24 h
	// the WAL of a 30-minute soak only grows.
	walMaxAge = 90 * time.Second
	// walSegmentBytes is the processors' WAL segment size in the soak.
	// Retention prunes whole segments, and the active one never: with
	// the default 64 MiB a slot at a few hundred records/s fills its
	// first segment after a quarter of an hour, so the WAL of a short
	// soak only grows and its slope says nothing. At 4 MiB it reaches
	// its steady sawtooth inside the warm-up.
	walSegmentBytes = 4 << 20
)

// rig is the system under soak: kfake, redis-server with its append-only
// file, three `rostrum run` processors and a `rostrum gateway`.
type rig struct {
	t      *testing.T
	bin    string
	kafka  *testenv.Kafka
	redis  *testenv.Redis
	topics processor.Topics
	logDir string
	boards string // the boards config file (chaos.BoardsYAML)
	// decayAt is the moment the decay boards' base target moves
	// (internal/testkit/chaos/checkdecay.go): mid-run, so that the processors
	// rebase under the faults.
	decayAt time.Time
	wal     [slots]string

	mu      sync.Mutex
	procs   [slots]*Proc
	gateway *Proc
	starts  int
}

// newRig starts the rig's servers for set; the decay boards' base moves
// half-way through the paced run.
func newRig(t *testing.T, set settings) *rig {
	t.Helper()
	bin, err := Binary(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The soak's fresh board events are at most 2 hours older than its
	// Source's now (input.go), which is after this: a move less than an
	// hour after it keeps them all in the half-life above the old base,
	// where the check is exact (internal/testkit/chaos/checkdecay.go).
	decayAt := time.Now().Add(min(set.calibrate+set.run/2, 50*time.Minute)).Truncate(time.Second)
	yml, err := chaos.BoardsYAML(decayAt)
	if err != nil {
		t.Fatal(err)
	}
	boards := filepath.Join(t.TempDir(), "boards.yaml")
	if err := os.WriteFile(boards, yml, 0o644); err != nil {
		t.Fatal(err)
	}
	// The processes' logs outlive the test, for a failure's post-mortem.
	logDir, err := os.MkdirTemp("", "rostrum-soak-logs-")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, bin: bin, topics: processor.TopicsFor("", env), logDir: logDir, boards: boards, decayAt: decayAt}
	// fsync always: a SIGKILLed server comes back with every write it
	// acknowledged, as in the chaos suite.
	r.redis = testenv.StartRedis(t, testenv.WithArgs("--appendonly", "yes", "--appendfsync", "always"))
	r.kafka = testenv.StartKafka(t, testenv.WithTopics(3, r.topics.All()...))
	for i := range r.wal {
		r.wal[i] = t.TempDir()
	}
	t.Cleanup(func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, p := range append(r.procs[:], r.gateway) {
			if p != nil {
				p.Kill()
			}
		}
	})
	return r
}

func (r *rig) addr() string { return fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(r.t)) }

// start starts a processor in slot, on the slot's WAL directory, retrying
// for 30 s while it cannot (Redis restarting).
func (r *rig) start(slot int) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		addr := r.addr()
		p, err := Start(fmt.Sprintf("processor %d", slot), r.bin, addr, filepath.Join(r.logDir, fmt.Sprintf("slot-%d.log", slot)),
			"run", "--brokers", strings.Join(r.kafka.Seeds, ","), "--redis", r.redis.Addr, "--env", env,
			"--wal-dir", r.wal[slot], "--wal-max-age", walMaxAge.String(), "--wal-segment-bytes", strconv.Itoa(walSegmentBytes), "--http", addr, "--create-topics",
			// kfake topics made by testenv carry no configs.
			"--allow-uncompacted-output",
			"--config", r.boards, "--log-level", "warn",
			// The hysteresis without dwell, grace or margin, so that the last
			// list of every room equals the model's top 7 once the run ends
			// (as in internal/testkit/chaos).
			"--stability-dwell", "0", "--stability-grace", "0", "--stability-margin", "0", "--max-future-skew", "1m", "--lag-interval", "1s")
		if err == nil {
			r.mu.Lock()
			r.procs[slot] = p
			r.starts++
			r.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (r *rig) startGateway() {
	r.t.Helper()
	addr := r.addr()
	p, err := Start("gateway", r.bin, addr, filepath.Join(r.logDir, "gateway.log"),
		"gateway", "--brokers", strings.Join(r.kafka.Seeds, ","), "--http", addr, "--gateway-insecure",
		"--route-default", env, "--log-level", "warn")
	if err != nil {
		r.t.Fatal(err)
	}
	r.gateway = p
}

// fault is one fault injected during the soak.
type fault struct {
	at, took time.Duration // since the soak began; until cleared
	what     string
}

// injectFaults injects one fault every r.faultEvery until ctx ends, in
// turn: a processor SIGKILLed and restarted on its WAL 1 s later, redis-server
// SIGKILLed and restarted with its data 1 s later, and 3 s of broker errors
// on produce, fetch and offset commit requests (retriable ones, so that the
// clients retry as against a real broker, and a share of produce requests
// failed outright, which the gateway answers 503 and the driver retries).
func (r *rig) injectFaults(ctx context.Context, every time.Duration, began time.Time) []fault {
	var out []fault
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return out
		case <-time.After(every):
		}
		f := fault{at: time.Since(began)}
		switch n % 3 {
		case 0:
			slot := (n / 3) % slots
			r.mu.Lock()
			p := r.procs[slot]
			r.procs[slot] = nil
			r.mu.Unlock()
			p.Kill()
			time.Sleep(time.Second)
			r.start(slot)
			f.what = fmt.Sprintf("processor %d SIGKILL, restart", slot)
		case 1:
			r.redis.Kill()
			time.Sleep(time.Second)
			r.redis.Restart(true)
			f.what = "redis-server SIGKILL, restart with its data"
		case 2:
			fh := r.kafka.Fault(
				kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.NotLeaderForPartition, Count: 40},
				kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Err: kerr.InvalidRecord, Count: 20},
				kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Err: kerr.NotLeaderForPartition, Count: 20},
				kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Err: kerr.CoordinatorLoadInProgress, Count: 10},
			)
			time.Sleep(3 * time.Second)
			fh.Remove()
			f.what = fmt.Sprintf("broker errors, %d requests failed", fh.Hits())
		}
		f.took = time.Since(began) - f.at
		out = append(out, f)
	}
}

// sample observes the rig once.
func (r *rig) sample(cl *http.Client, adm *kadm.Client, rc *redis.Client, began time.Time, drv *Driver) Sample {
	s := Sample{At: time.Since(began), Accepted: float64(drv.OK.Load())}
	r.mu.Lock()
	procs := r.procs
	gw := r.gateway
	r.mu.Unlock()
	for _, p := range procs {
		if p == nil {
			continue
		}
		if g, err := p.Scrape(cl); err == nil {
			s.ProcRSS += g.RSS
			s.ProcGoroutines += g.Goroutines
			s.ProcOpenFiles += g.OpenFiles
			s.Procs++
		}
	}
	if g, err := gw.Scrape(cl); err == nil {
		s.GatewayRSS, s.GatewayGor, s.GatewayFiles = g.RSS, g.Goroutines, g.OpenFiles
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if info, err := rc.InfoMap(ctx, "memory").Result(); err == nil {
		s.RedisMemory, _ = strconv.ParseFloat(info["Memory"]["used_memory"], 64)
	}
	for _, d := range r.wal {
		n, _ := DirBytes(d)
		s.WALBytes += float64(n)
	}
	s.Lag = math.NaN()
	if lags, err := adm.Lag(ctx, group); err == nil {
		if l, ok := lags[group]; ok && l.Error() == nil {
			s.Lag = float64(l.Lag.Total())
		}
	}
	return s
}

// TestSoak runs the gateway, three processors and the leaderboards for
// ROSTRUM_SOAK_MINUTES at half the flat-out rate through the gateway, with
// a fault every few minutes, sampling each process's RSS, goroutines and
// open files, Redis's memory, the WALs' size and the consumer lag. After
// the warm-up each must be flat (Slopes), and at the end the state must
// equal the model of what the input topics hold, every board included:
// nothing lost, nothing applied twice, and every record of every request
// the gateway answered 2xx in the topics. make soak runs it;
// docs/RELIABILITY.md "Soak" has the figures of a 30-minute run.
//
// Without ROSTRUM_SOAK_MINUTES (go test ./..., make test) it runs the same
// way for 45 s after a 10 s calibration, with a fault of each kind
// (a processor SIGKILL, a Redis restart, broker errors), and reports the
// slopes without judging them (judgeAfter). It builds rostrum itself when
// ROSTRUM_SOAK_BIN is not set, and is skipped in -short mode only.
//
// The flat-out rate is measured first, on the same path: ROSTRUM_SOAK_CALIBRATE
// (20 s) of 64 clients posting as fast as the gateway answers while the
// processors consume. Half of it is the soak's rate, up to
// ROSTRUM_SOAK_MAX_RECORDS (2,000,000) over the run.
func TestSoak(t *testing.T) {
	set := readSettings(t)
	r := newRig(t, set)
	for slot := range slots {
		r.start(slot)
	}
	r.startGateway()
	src := NewSource(env, 100000)
	drv := NewDriver(src, r.gateway.Addr, 64)

	calCtx, cancel := context.WithTimeout(t.Context(), set.calibrate)
	calStart := time.Now()
	calOK := drv.Run(calCtx, 64, 0)
	cancel()
	flat := float64(calOK) / time.Since(calStart).Seconds()
	rate := flat / 2
	t.Logf("flat-out through the gateway: %.0f records/s (%d in %s, 64 clients); the soak offers %.0f records/s", flat, calOK, set.calibrate, rate)
	if capped := set.maxRecords / set.run.Seconds(); rate > capped {
		rate = capped
		t.Logf("the soak offers %.0f records/s instead: %.0f records over %s at most (maxRecords: the oracle's memory)", rate, set.maxRecords, set.run)
	}
	// The calibration left a backlog (the processors share the two cores
	// with the gateway); the soak starts once it is consumed, so that the
	// warm-up is the processes' own and not the backlog's.
	r.kafka.WaitCaughtUp(t, group, 9, 5*time.Minute, "logs in "+r.logDir)

	began := time.Now()
	runCtx, stopRun := context.WithTimeout(t.Context(), set.run)
	defer stopRun()
	var samples []Sample
	var faults []fault
	var wg sync.WaitGroup
	wg.Add(2)
	mcl := &http.Client{Timeout: 2 * time.Second}
	adm := kadm.NewClient(r.kafka.Client())
	rc := r.redis.Client()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(set.sampleEvery)
		defer tick.Stop()
		for {
			samples = append(samples, r.sample(mcl, adm, rc, began, drv))
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	go func() {
		defer wg.Done()
		faults = r.injectFaults(runCtx, set.faultEvery, began)
	}()
	soakOK := drv.Run(runCtx, 32, rate)
	wg.Wait()
	took := time.Since(began)
	achieved := float64(soakOK) / took.Seconds()

	// Drain: every slot runs, the group commits everything, the
	// hysteresis settles; then everything stops cleanly.
	for slot := range slots {
		if r.procs[slot] == nil {
			r.start(slot)
		}
	}
	r.kafka.WaitCaughtUp(t, group, 9, 10*time.Minute, "logs in "+r.logDir)
	waitSettled(t, rc, r.logDir)
	for slot := range slots {
		if err := r.procs[slot].Stop(); err != nil {
			t.Errorf("%v; logs in %s", err, r.logDir)
		}
		r.procs[slot] = nil
	}
	if err := r.gateway.Stop(); err != nil {
		t.Errorf("%v; logs in %s", err, r.logDir)
	}
	r.gateway = nil

	var inputs []*kgo.Record
	for _, topic := range r.topics.Inputs() {
		inputs = append(inputs, r.kafka.ReadAll(topic)...)
	}
	rec, err := src.Reconcile(inputs)
	if err != nil {
		t.Fatal(err)
	}
	in := chaos.NewInput(env, 7, rec.Trace, model.New(codec.NewMeeting(codec.DefaultEpoch)))
	if in.Boards, err = chaos.BoardsAt(r.decayAt); err != nil {
		t.Fatal(err)
	}
	// No settled records: the soak sets no settlement clock (in.SettleClock),
	// so chaos.Check does not look for settled periods.
	rep, err := chaos.Check(context.Background(), rc, r.kafka.ReadAll(r.topics.TopN), r.kafka.ReadAll(r.topics.DLQ), nil, inputs, in)
	if err != nil {
		t.Fatal(err)
	}
	slopes := Slopes(samples, set.warmup)

	// The figures.
	t.Logf("soak: %s paced run after a %s calibration; warm-up %s; samples every %s; a fault every %s",
		set.run, set.calibrate, set.warmup, set.sampleEvery, set.faultEvery)
	t.Logf("offered %.0f records/s (%.0f %% of %.0f flat out), achieved %.0f records/s answered 2xx", rate, 100*rate/flat, flat, achieved)
	t.Logf("gateway: %d requests, %d answered 2xx, %d 4xx, %d 5xx or failed (retried); %d trace records retried, %d never answered 2xx/4xx (the run ended)",
		drv.Requests.Load(), drv.OK.Load(), drv.Refused.Load(), drv.Failed.Load(), rec.Retried, rec.Unanswered)
	t.Logf("topics: %d input records (%d events); %d records of 2xx answers missing; %d records no request sent; %d generated records left out (bad arrays over several rooms)",
		len(inputs), countEvents(rec), rec.LostN, rec.UnexpectedN, rec.Skipped)
	t.Logf("model: %d rooms, %d members (%d ranked); outputs %d (%d identical repeats); DLQ %d (%d distinct); boards: %d records with board events (%d late), %d rankings, %d ranked members compared",
		rep.Rooms, rep.Members, rep.Ranked, rep.Outputs, rep.Repeats, rep.DLQ, rep.DLQDistinct, rep.BoardRecords, rep.BoardLate, rep.BoardRankings, rep.BoardEntries)
	t.Logf("faults: %d; processes started %d", len(faults), r.starts)
	var marks []time.Duration
	for _, f := range faults {
		marks = append(marks, f.at)
		t.Logf("  %6s +%-6s %s", f.at.Round(time.Second), f.took.Round(100*time.Millisecond), f.what)
	}
	if d := rep.Decay; d != nil {
		t.Logf("decay boards: base target moved at +%s; %d records with a late event (%d in the DLQ, reason late), %d sums and reads compared equal",
			r.decayAt.Sub(began).Round(time.Second), d.Late, d.LateInDLQ, d.Compared)
		for i, b := range d.Boards {
			t.Logf("  %-18s base %d, %d rebases held since Redis began, %d mismatches", b.Name(), d.Bases[i], d.Rebases[i], d.Mismatches[i])
		}
	}
	judged := "flat: growth over the window ≤ " + strconv.FormatFloat(100*MaxDrift, 'f', 0, 64) + " % of the mean, or ≤ the floor"
	if !set.judge {
		judged = "reported, not judged: a run under " + judgeAfter.String()
	}
	t.Logf("slopes after the warm-up (%s):", judged)
	flatAll := true
	for _, s := range slopes {
		verdict := "flat"
		switch {
		case !s.Flat && set.judge:
			verdict, flatAll = "NOT FLAT", false
		case !s.Flat:
			verdict = "not flat (not judged)"
		}
		t.Logf("  %-28s mean %10.1f %-7s slope %+10.2f/h  drift %+9.1f (floor %g)  %s",
			s.Metric.Name, s.Mean, s.Metric.Unit, s.PerHour, s.Drift, s.Metric.Floor, verdict)
	}
	t.Logf("lost %d", rep.Lost+rec.LostN)
	t.Logf("applied twice %d", rep.AppliedTwice)
	t.Logf("board mismatches %d, slot moves %d", rep.Mismatch, rep.Moved)

	if set.csv != "" {
		f, err := os.Create(set.csv)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteCSV(f, samples); err != nil {
			t.Error(err)
		}
		f.Close()
	}
	if set.chart != "" {
		title := fmt.Sprintf("rostrum soak: %s at %.0f records/s through the gateway (%.0f %% of flat out), a fault every %s",
			set.run.Round(time.Minute), rate, 100*rate/flat, set.faultEvery)
		if err := WriteChart(set.chart, title, samples, set.warmup, slopes, marks); err != nil {
			t.Error(err)
		}
	}

	for _, p := range rep.Problems {
		t.Error(p)
	}
	for _, l := range rec.Lost {
		t.Errorf("answered 2xx, not in the topic: %s", l)
	}
	for _, u := range rec.Unexpected {
		t.Errorf("in the topic, never sent: %s", u)
	}
	if !rep.OK() || rec.LostN > 0 || rec.UnexpectedN > 0 {
		t.Errorf("lost %d (gateway %d), applied twice %d, board mismatches %d; logs in %s", rep.Lost+rec.LostN, rec.LostN, rep.AppliedTwice, rep.Mismatch, r.logDir)
	}
	if !flatAll {
		t.Errorf("a figure is not flat after the warm-up (see the slopes above)")
	}
	if len(faults) == 0 {
		t.Errorf("no fault was injected: ROSTRUM_SOAK_FAULT_EVERY %s is longer than the run", set.faultEvery)
	}
}

func countEvents(rec *Reconciled) int {
	n := 0
	for _, r := range rec.Trace {
		n += len(r.Events)
	}
	return n
}

// waitSettled waits until no room's stable list waits for its hysteresis
// timer (the due set, sink/due.go, is empty).
func waitSettled(t *testing.T, rc *redis.Client, logDir string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := rc.ZCard(context.Background(), "rostrum:"+env+":due").Result()
		if err == nil && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rooms still due after a minute (%v); logs in %s", n, err, logDir)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
