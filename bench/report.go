package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rostrumhq/rostrum/sink"
)

// Report is the outcome of a run: one Result per mode run, and the ratios.
type Report struct {
	Workload WorkloadSummary `json:"workload"`
	Machine  Machine         `json:"machine"`
	Results  []Result        `json:"results"`
	// RostrumOverNaive and RostrumOverCeiling divide the rostrum flat-out
	// events/s by the naive and ceiling ones (0: a mode was not run).
	RostrumOverNaive   float64 `json:"rostrum_over_naive"`
	RostrumOverCeiling float64 `json:"rostrum_over_ceiling"`
	// Problems lists what went wrong without stopping the run: DLQ records,
	// retried batches, records not consumed. Empty on a clean run.
	Problems []string `json:"problems"`
	// Notes say where a run differs from what was asked (a shortened run).
	Notes []string `json:"notes,omitempty"`
}

// WorkloadSummary describes the generated records.
type WorkloadSummary struct {
	Name            string  `json:"name"`
	Seed            uint64  `json:"seed"`
	Rooms           int     `json:"rooms"`    // rooms (churn: open at once)
	Members         int     `json:"members"`  // members per room
	RoomIDs         int     `json:"room_ids"` // distinct rooms named by the records
	Records         int     `json:"records"`
	Events          int     `json:"events"`
	VolumeShare     float64 `json:"volume_share"` // share of volume events
	EventsPerRecord float64 `json:"events_per_record"`
	BytesPerRecord  float64 `json:"bytes_per_record"` // mean record value size
}

// Machine describes the computer the run measured.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Redis      string `json:"redis"`
	// RedisMasters are the masters' addresses when the run used a Redis
	// Cluster (--redis with several addresses); empty for a single node.
	RedisMasters []string `json:"redis_masters,omitempty"`
	// Embedded says the Kafka broker runs inside this process (kfake), so
	// this process's CPU and allocations include the broker's.
	EmbeddedKafka bool `json:"embedded_kafka"`
	// Revision is the VCS revision the binary was built from ("+dirty"
	// when the tree had changes), if the build recorded it.
	Revision string `json:"revision,omitempty"`
}

// Result is one mode's measurement. Per-event figures divide by Events;
// a zero figure means it does not apply to the mode.
type Result struct {
	// Mode is "rostrum" (flat out, preloaded), "rostrum@rate" (fixed
	// offered rate), "naive" or "ceiling".
	Mode    string  `json:"mode"`
	Events  int64   `json:"events"`
	Records int64   `json:"records,omitempty"`
	Seconds float64 `json:"seconds"`
	// EventsPerSec is Events / Seconds.
	EventsPerSec float64 `json:"events_per_sec"`
	// OfferedRate is the rate the producer aimed at (rostrum@rate only),
	// and OfferedFraction that rate over the flat-out rate.
	OfferedRate     float64 `json:"offered_rate,omitempty"`
	OfferedFraction float64 `json:"offered_fraction,omitempty"`
	// WarmupSeconds is how long the fixed-rate run offered the rate before
	// it began to measure (rostrum@rate only).
	WarmupSeconds float64 `json:"warmup_seconds,omitempty"`
	// RostrumOver is the rostrum flat-out events/s divided by this mode's.
	RostrumOver float64 `json:"rostrum_over,omitempty"`
	// Latency is from record timestamp to output publish (rostrum modes):
	// the output record's broker timestamp minus its ts, the newest event
	// of the room in the batch.
	Latency *Latency `json:"latency_ms,omitempty"`
	// AckLatency is the processor's own figure (its PublishLatency
	// observations, rostrum_publish_latency_seconds): from the Kafka
	// timestamp of the room's oldest record in the batch to the broker's
	// acknowledgement of the room's output, to 1 µs. Outputs of the
	// hysteresis timer are not in it (they answer no record).
	AckLatency *Latency `json:"ack_latency_ms,omitempty"`

	// Batches: poll batches (rostrum), events (naive: each is its own
	// batch), pipelines of ZADDs (ceiling).
	Batches        int64   `json:"batches,omitempty"`
	EventsPerBatch float64 `json:"events_per_batch,omitempty"`
	// RoundTrips counts the pipelines and single commands the mode's Redis
	// client sent (a go-redis hook).
	RoundTrips int64 `json:"redis_round_trips"`
	Dials      int64 `json:"redis_dials"` // connections opened (their handshakes are not round trips above)
	// RoundTripsPerBatch is, in the rostrum modes, the sink's apply round
	// trips per batch (sink.Store.TripStats; the hysteresis timer's
	// applies, which run between batches, included), each sent in one or
	// more overlapping pipelines; in the others, RoundTrips per batch.
	RoundTripsPerBatch float64 `json:"redis_round_trips_per_batch"`
	// PipelinesPerBatch (rostrum modes) is RoundTrips per batch, less
	// TimerRoundTrips: those of the hysteresis timer's passes.
	PipelinesPerBatch float64 `json:"redis_pipelines_per_batch,omitempty"`
	TimerRoundTrips   int64   `json:"redis_timer_round_trips,omitempty"`
	// StateCache counts the room applies by path: planned from the sink's
	// state cache, or read first (rostrum modes).
	StateCache *sink.CacheStats `json:"state_cache,omitempty"`
	// RedisCommandsPerEvent counts every command Redis executed
	// (total_commands_processed), those run inside scripts included;
	// ClientCommandsPerEvent counts those the client sent (EVALSHA counts
	// once).
	RedisCommandsPerEvent  float64 `json:"redis_commands_per_event"`
	RedisCommandsPerBatch  float64 `json:"redis_commands_per_batch,omitempty"`
	ClientCommandsPerEvent float64 `json:"client_commands_per_event"`
	// Commands are Redis's commandstats calls during the window, by command.
	Commands map[string]int64 `json:"redis_commands,omitempty"`

	// AllocsPerEvent and BytesPerEvent are this process's heap allocations
	// (runtime.MemStats Mallocs, TotalAlloc) during the window per event.
	AllocsPerEvent float64 `json:"allocs_per_event"`
	BytesPerEvent  float64 `json:"bytes_per_event"`
	// CPUSecondsPerMEvents is this process's user+system CPU (getrusage)
	// per million events; RedisCPUSecondsPerMEvents is redis-server's
	// (INFO used_cpu_user + used_cpu_sys).
	CPUSecondsPerMEvents      float64 `json:"cpu_seconds_per_m_events"`
	RedisCPUSecondsPerMEvents float64 `json:"redis_cpu_seconds_per_m_events"`
	// ProcessorCPUSecondsPerMEvents is the processor's share of
	// CPUSecondsPerMEvents, without the in-process broker and load
	// producer (rostrum modes; see cpuShares); CPUShares is each role's
	// share of the process's CPU.
	ProcessorCPUSecondsPerMEvents float64            `json:"processor_cpu_seconds_per_m_events,omitempty"`
	CPUShares                     map[string]float64 `json:"cpu_shares,omitempty"`
	// RedisBusy is the busiest Redis node's CPU seconds per second of the
	// window (1: a whole core). Redis runs the scripts on one thread, so
	// this is how close the mode came to its limit: past about 0.6 batches
	// grow and latency with them (docs/SCALING.md). ProcessorCores is the
	// processor's own CPU seconds per second.
	RedisBusy      float64 `json:"redis_busy,omitempty"`
	ProcessorCores float64 `json:"processor_cores,omitempty"`
	// RedisNodes splits RedisCPUSecondsPerMEvents and the commands across
	// the masters of a Redis Cluster, in Machine.RedisMasters order (runs
	// against a cluster only).
	RedisNodes []RedisNode `json:"redis_nodes,omitempty"`

	// RedisBytesPerMember is Redis's used_memory after the mode minus
	// before it (after FLUSHALL), divided by RankedMembers, the total ZCARD
	// of the rooms' ranking sets: every key the mode wrote is charged to
	// the ranked members.
	RedisBytesPerMember float64            `json:"redis_bytes_per_member,omitempty"`
	RankedMembers       int64              `json:"ranked_members,omitempty"`
	RedisKeys           map[string]KeyKind `json:"redis_keys,omitempty"`
	// WALBytesPerEvent is the size of the WAL directory divided by Events.
	WALBytesPerEvent float64 `json:"wal_bytes_per_event,omitempty"`

	// Stages are the mean milliseconds per batch of the processor's steps
	// (rostrum modes), or of the naive design's per-event steps.
	Stages map[string]float64 `json:"stages_ms,omitempty"`

	// Processor counters (rostrum modes).
	Published int64 `json:"published,omitempty"`
	DLQ       int64 `json:"dlq"`
	Retries   int64 `json:"retries"`
	Conflicts int64 `json:"conflicts"`
}

// KeyKind is the keys of one kind (the text after the room hash tag, e.g.
// ":z") and their mean MEMORY USAGE.
type KeyKind struct {
	Keys        int64   `json:"keys"`
	BytesPerKey float64 `json:"bytes_per_key"`
}

// Latency is a latency distribution in milliseconds.
type Latency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50"`
	P99     float64 `json:"p99"`
	P999    float64 `json:"p999"`
	Max     float64 `json:"max"`
}

// latencyOf summarizes samples (it sorts them); nil when there are none.
func latencyOf(samples []int64) *Latency {
	if len(samples) == 0 {
		return nil
	}
	slices.Sort(samples)
	q := func(p float64) float64 {
		i := int(p*float64(len(samples))+0.999999) - 1
		return float64(samples[max(0, min(i, len(samples)-1))])
	}
	return &Latency{Samples: len(samples), P50: q(0.50), P99: q(0.99), P999: q(0.999), Max: float64(samples[len(samples)-1])}
}

// latencyOfMicros summarizes samples in µs (it sorts them) in ms; nil when
// there are none.
func latencyOfMicros(samples []int64) *Latency {
	l := latencyOf(samples)
	if l == nil {
		return nil
	}
	l.P50, l.P99, l.P999, l.Max = l.P50/1000, l.P99/1000, l.P999/1000, l.Max/1000
	return l
}

// result returns the Result of mode, or nil.
func (r *Report) result(mode string) *Result {
	for i := range r.Results {
		if r.Results[i].Mode == mode {
			return &r.Results[i]
		}
	}
	return nil
}

// setBusy sets RedisBusy and ProcessorCores from the per-event CPU and
// the rate: CPU seconds per million events × millions of events per second.
func (r *Result) setBusy() {
	perSec := r.EventsPerSec / 1e6
	r.RedisBusy = r.RedisCPUSecondsPerMEvents * perSec
	if len(r.RedisNodes) > 0 {
		r.RedisBusy = 0
		for _, n := range r.RedisNodes {
			r.RedisBusy = max(r.RedisBusy, n.CPUSecondsPerMEvents*perSec)
		}
	}
	r.ProcessorCores = r.ProcessorCPUSecondsPerMEvents * perSec
}

// ratios fills the rostrum/mode ratios, and each result's busy figures.
func (r *Report) ratios() {
	for i := range r.Results {
		r.Results[i].setBusy()
	}
	ros := r.result(ModeRostrum)
	if ros == nil || ros.EventsPerSec == 0 {
		return
	}
	for i := range r.Results {
		res := &r.Results[i]
		if res.EventsPerSec > 0 && res.Mode != modeRate {
			res.RostrumOver = ros.EventsPerSec / res.EventsPerSec
		}
	}
	if n := r.result(ModeNaive); n != nil {
		r.RostrumOverNaive = n.RostrumOver
	}
	if c := r.result(ModeCeiling); c != nil {
		r.RostrumOverCeiling = c.RostrumOver
	}
}

// WriteTable prints the report as a table with the ratios below it.
func (r *Report) WriteTable(w io.Writer) error {
	ws := r.Workload
	fmt.Fprintf(w, "workload %s (seed %d): %d events in %d records (%.2f events/record, %.0f%% volume, %.0f B/record), %d rooms × %d members",
		ws.Name, ws.Seed, ws.Events, ws.Records, ws.EventsPerRecord, 100*ws.VolumeShare, ws.BytesPerRecord, ws.Rooms, ws.Members)
	if ws.RoomIDs != ws.Rooms {
		fmt.Fprintf(w, " (%d rooms in all)", ws.RoomIDs)
	}
	m := r.Machine
	fmt.Fprintf(w, "\nmachine  %d CPUs (%s), %s, %s, redis %s", m.CPUs, m.CPUModel, m.Go, m.OS, m.Redis)
	if m.Revision != "" {
		fmt.Fprintf(w, ", rostrum %s", m.Revision)
	}
	if len(m.RedisMasters) > 0 {
		fmt.Fprintf(w, ", Redis Cluster of %d masters", len(m.RedisMasters))
	}
	if m.EmbeddedKafka {
		fmt.Fprint(w, "; Kafka broker in process (its CPU and allocations count in CPU s/M events, not in processor CPU s/M)")
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tevents\tevents/s\trostrum/mode\tp50 ms\tp99 ms\tp999 ms\tack p50 ms\tack p99 ms\tredis cmds/event\tround trips/batch\tallocs/event\tB/event\tCPU s/M events\tprocessor CPU s/M\tredis CPU s/M events\tredis busy\tredis B/member\tWAL B/event\t")
	for _, res := range r.Results {
		p50, p99, p999 := "-", "-", "-"
		if l := res.Latency; l != nil {
			p50, p99, p999 = num(l.P50, 0), num(l.P99, 0), num(l.P999, 0)
		}
		ackP50, ackP99 := "-", "-"
		if l := res.AckLatency; l != nil {
			ackP50, ackP99 = num(l.P50, 0), num(l.P99, 0)
		}
		mode := res.Mode
		if res.Mode == modeRate {
			mode = fmt.Sprintf("rostrum@%.0f/s", res.OfferedRate)
		}
		ratio := "-"
		if res.RostrumOver > 0 {
			ratio = num(res.RostrumOver, 2) + "×"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", mode, res.Events,
			num(res.EventsPerSec, 0), ratio, p50, p99, p999, ackP50, ackP99, dash(res.RedisCommandsPerEvent, 2),
			dash(res.RoundTripsPerBatch, 2), dash(res.AllocsPerEvent, 1), dash(res.BytesPerEvent, 0),
			dash(res.CPUSecondsPerMEvents, 2), dash(res.ProcessorCPUSecondsPerMEvents, 2), dash(res.RedisCPUSecondsPerMEvents, 2),
			dash(res.RedisBusy, 2), dash(res.RedisBytesPerMember, 0), dash(res.WALBytesPerEvent, 0))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if r.RostrumOverNaive > 0 {
		fmt.Fprintf(w, "rostrum/naive   = %.1f×\n", r.RostrumOverNaive)
	}
	if r.RostrumOverCeiling > 0 {
		fmt.Fprintf(w, "rostrum/ceiling = %.2f×\n", r.RostrumOverCeiling)
	}
	for _, res := range r.Results {
		if c := res.StateCache; c != nil {
			mode := res.Mode
			if res.Mode == modeRate {
				mode = fmt.Sprintf("rostrum@%.0f/s", res.OfferedRate)
			}
			fmt.Fprintf(w, "state cache, %s: room applies %d merged (one round trip), %d fast; %d rooms read first (%d of them stale plans); %d members held\n",
				mode, c.Merged, c.Fast-c.Merged, c.Loaded, c.Stale, c.Members)
		}
	}
	for _, res := range r.Results {
		if len(res.RedisNodes) == 0 {
			continue
		}
		mode := res.Mode
		if res.Mode == modeRate {
			mode = fmt.Sprintf("rostrum@%.0f/s", res.OfferedRate)
		}
		parts := make([]string, len(res.RedisNodes))
		for i, n := range res.RedisNodes {
			parts[i] = fmt.Sprintf("%s %.2f CPU-s/M events (%.0f%%), %.2f cmds/event", n.Addr, n.CPUSecondsPerMEvents, 100*n.CPUShare, n.CommandsPerEvent)
		}
		fmt.Fprintf(w, "redis masters, %s: %s\n", mode, strings.Join(parts, "; "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
	return nil
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func dash(v float64, prec int) string {
	if v == 0 {
		return "-"
	}
	return num(v, prec)
}
