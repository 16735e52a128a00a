package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/bench"
	"github.com/rostrumhq/rostrum/bench/flicker"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/meeting"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/wal"
)

// TestBench runs `rostrum-dev bench` on a tiny workload with every mode and
// checks that the JSON report holds plausible figures. It asserts no
// timings: a slow machine gives smaller numbers, not a failure.
func TestBench(t *testing.T) {
	testenv.RedisBinary(t) // the benchmark starts a private redis-server
	var stdout, stderr bytes.Buffer
	err := cmdBench(context.Background(), []string{"--events", "20000", "--rooms", "200", "--members", "20",
		"--naive-seconds", "1", "--rate-seconds", "1", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep bench.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if len(rep.Problems) > 0 {
		t.Errorf("problems: %q", rep.Problems)
	}
	if rep.Workload.Name != "meeting" || rep.Workload.Events != 20000 || rep.Workload.Rooms != 200 || rep.Workload.Members != 20 {
		t.Errorf("workload %+v, want meeting with 20000 events, 200 rooms of 20 members", rep.Workload)
	}
	if rep.Machine.CPUs < 1 || rep.Machine.Go == "" || rep.Machine.Redis == "" {
		t.Errorf("machine %+v lacks facts", rep.Machine)
	}
	modes := map[string]bench.Result{}
	for _, r := range rep.Results {
		modes[r.Mode] = r
		if r.Events <= 0 || r.Seconds <= 0 || r.EventsPerSec <= 0 {
			t.Errorf("%s: %d events in %v s, %v events/s", r.Mode, r.Events, r.Seconds, r.EventsPerSec)
		}
		if r.RoundTrips <= 0 || r.RedisCommandsPerEvent <= 0 || r.AllocsPerEvent <= 0 || r.BytesPerEvent <= 0 || r.CPUSecondsPerMEvents <= 0 {
			t.Errorf("%s: a cost is missing: %+v", r.Mode, r)
		}
	}
	for _, m := range []string{"rostrum", "rostrum@rate", "naive", "ceiling"} {
		if _, ok := modes[m]; !ok {
			t.Fatalf("no result for mode %s; results: %+v", m, rep.Results)
		}
	}
	for _, m := range []string{"rostrum", "rostrum@rate"} {
		r := modes[m]
		if r.Events != 20000 && m == "rostrum" {
			t.Errorf("%s: %d events, want 20000", m, r.Events)
		}
		// A batch's rooms take one apply round trip, two when some are
		// read first; the timer's applies count in too, at most one
		// round trip each of its own.
		timer := float64(r.TimerRoundTrips) / float64(max(r.Batches, 1))
		if r.Batches < 1 || r.RoundTripsPerBatch < 1 || r.RoundTripsPerBatch > 2+timer {
			t.Errorf("%s: %v round trips per batch over %d batches (timer %v), want 1..2", m, r.RoundTripsPerBatch, r.Batches, timer)
		}
		if r.PipelinesPerBatch < 1 {
			t.Errorf("%s: %v pipelines per batch, want at least one per round trip", m, r.PipelinesPerBatch)
		}
		if r.Latency == nil || r.Latency.Samples == 0 || r.Latency.P50 < 0 || r.Latency.P99 < r.Latency.P50 || r.Latency.P999 < r.Latency.P99 {
			t.Errorf("%s: latency %+v", m, r.Latency)
		}
		// The processor's own figure: from the room's oldest record in the
		// batch to the broker's acknowledgement of its output.
		if a := r.AckLatency; a == nil || a.Samples == 0 || a.P50 < 0 || a.P99 < a.P50 || a.Max < a.P99 {
			t.Errorf("%s: ack latency %+v", m, a)
		}
		if r.Published == 0 || r.DLQ != 0 || r.Retries != 0 {
			t.Errorf("%s: %d published, %d DLQ, %d retries", m, r.Published, r.DLQ, r.Retries)
		}
		// The processor's CPU apart from the in-process broker's and the
		// load producer's: a share of the process's (in a run this short
		// the broker may not be sampled at all).
		if p := r.ProcessorCPUSecondsPerMEvents; p <= 0 || p > r.CPUSecondsPerMEvents*(1+1e-9) || r.CPUShares["processor"] <= 0 {
			t.Errorf("%s: processor CPU %v s/M of the process's %v, shares %v", m, p, r.CPUSecondsPerMEvents, r.CPUShares)
		}
	}
	ros := modes["rostrum"]
	if ros.WALBytesPerEvent <= 0 || ros.RedisBytesPerMember <= 0 || ros.RankedMembers <= 0 {
		t.Errorf("rostrum: WAL %v B/event, Redis %v B/member over %d members", ros.WALBytesPerEvent, ros.RedisBytesPerMember, ros.RankedMembers)
	}
	if n := modes["naive"]; n.RoundTripsPerBatch < 2 {
		t.Errorf("naive: %v Redis round trips per event, want 2 (ZADD, ZREVRANGE)", n.RoundTripsPerBatch)
	}
	if rep.RostrumOverNaive <= 0 || rep.RostrumOverCeiling <= 0 {
		t.Errorf("ratios rostrum/naive %v, rostrum/ceiling %v", rep.RostrumOverNaive, rep.RostrumOverCeiling)
	}
	if want := ros.EventsPerSec / modes["naive"].EventsPerSec; rep.RostrumOverNaive != want {
		t.Errorf("rostrum/naive = %v, want %v", rep.RostrumOverNaive, want)
	}
}

// TestBenchFlags checks that bad settings are refused before anything starts.
func TestBenchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--workload", "concert"},
		{"--modes", "rostrum,fast"},
		{"--events", "0"},
		{"--naive-seconds", "0"},
		{"--wal-sync", "sometimes"},
		{"--redis-user", "bench"}, // credentials need --redis
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if err := cmdBench(context.Background(), args, &stdout, &stderr); err == nil {
			t.Errorf("bench %q: no error", args)
		}
	}
}

// TestBenchFlicker runs `rostrum-dev bench --flicker` on short meetings and
// checks the JSON report: every scenario with the three strategies. Its
// numbers are asserted in package flicker.
func TestBenchFlicker(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := cmdBench(context.Background(), []string{"--flicker", "--duration", "1m", "--scenarios", "discussion,lecture", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("bench --flicker: %v\nstderr:\n%s", err, stderr.String())
	}
	var rep flicker.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout.String())
	}
	if len(rep.Scenarios) != 2 || rep.Scenarios[0].Name != "discussion" || rep.Dwell != "1s" {
		t.Fatalf("report %+v", rep)
	}
	for _, s := range rep.Scenarios {
		if len(s.Results) != 3 || s.Result(flicker.Hysteresis) == nil || s.Events == 0 {
			t.Fatalf("%s: %+v", s.Name, s)
		}
	}
	stdout.Reset()
	if err := cmdBench(context.Background(), []string{"--flicker", "--duration", "1m", "--scenarios", "lecture"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "lecture  hysteresis") {
		t.Fatalf("table:\n%s", stdout.String())
	}
	if err := cmdBench(context.Background(), []string{"--flicker", "--scenarios", "opera"}, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "opera") {
		t.Fatalf("unknown scenario: %v", err)
	}
}

// TestBenchFlickerWAL replays meetings recorded in a WAL: two rooms of
// generated meetings (one with screen-share hand-overs), a bad record and a
// callback of an unknown type, in one WAL; the report has a row per room
// and strategy and an overall row, the hysteresis calmer than the seed
// merge in each.
func TestBenchFlickerWAL(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var recs []wal.Record
	add := func(room string, value string) {
		recs = append(recs, wal.Record{Topic: "prod.callbacks.rtc", Offset: int64(len(recs)), Key: []byte(room), Value: []byte(value)})
	}
	for _, name := range []string{"handover", "discussion"} {
		sc, err := meeting.ScenarioByName(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range meeting.Generate(sc, 4*time.Minute, 1) {
			var v string
			switch ev.Type {
			case codec.TypeJoin, codec.TypeLeave:
			case codec.TypeRole:
				v = fmt.Sprintf(`,"value":%q`, codec.Role(ev.Value))
			default:
				v = fmt.Sprintf(`,"value":%d`, ev.Value)
			}
			add(ev.RoomID, fmt.Sprintf(`{"room_id":%q,"user_id":%q,"type":%q%s,"ts":%d}`, ev.RoomID, ev.UserID, ev.Type, v, ev.TS))
		}
	}
	add("r-handover", `{"room_id":"r-handover","user_id":"u-1","type":"volume","value":5000,"ts":1763700000000}`)
	add("r-handover", `{"room_id":"r-handover","user_id":"u-1","type":"hand_raise","ts":1763700000000}`)
	for chunk := range slices.Chunk(recs, 5000) {
		if _, err := l.Append(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := cmdBench(context.Background(), []string{"--flicker", "--wal", dir, "--json"}, &stdout, &stderr); err != nil {
		t.Fatalf("bench --flicker --wal: %v\n%s", err, stderr.String())
	}
	var rep flicker.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 3 || rep.Scenarios[0].Name != "r-discussion" || rep.Scenarios[1].Name != "r-handover" ||
		rep.Scenarios[2].Name != "overall" || rep.Rules != codec.DefaultRules().String() {
		t.Fatalf("report rows %+v", rep)
	}
	for _, s := range rep.Scenarios {
		h, seed := s.Result(flicker.Hysteresis), s.Result(flicker.Merge)
		if h == nil || seed == nil || s.Events == 0 || h.ChangesPerMin >= seed.ChangesPerMin || h.OutputsPerMin < h.ChangesPerMin/2 {
			t.Fatalf("%s: %+v", s.Name, s.Results)
		}
	}
	stdout.Reset()
	if err := cmdBench(context.Background(), []string{"--flicker", "--wal", dir, "--ranking", "audio,volume"}, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "ranking rules audio,volume") || !strings.Contains(stdout.String(), "overall  hysteresis") {
		t.Fatalf("table:\n%s", stdout.String())
	}
}
