package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

// Kind is a kind of fault.
type Kind string

// The faults a schedule draws from.
const (
	ProcKill    Kind = "processor SIGKILL"
	RedisKeep   Kind = "redis SIGKILL, restart with data"
	RedisWipe   Kind = "redis SIGKILL, restart empty"
	BrokerError Kind = "broker request errors"
	BrokerDelay Kind = "broker request delays"
	Join        Kind = "processor joins"
	Leave       Kind = "processor leaves (SIGTERM)"
	Zombie      Kind = "zombie processor (SIGSTOP, partitions move, SIGCONT)"
)

// Kinds lists every kind, in the order figures are printed.
var Kinds = []Kind{ProcKill, RedisKeep, RedisWipe, BrokerError, BrokerDelay, Join, Leave, Zombie}

// Fault is one injected fault, as it happened.
type Fault struct {
	Kind   Kind
	Detail string
	Begin  time.Time // injected
	End    time.Time // cleared: process back, Redis back, hooks removed, zombie resumed
	// Hit says the fault struck work in flight (see Schedule.Hits).
	Hit bool
}

// Schedule injects faults drawn from a seeded generator. The sequence of
// faults and their parameters is a function of the seed; only the moments
// depend on the machine.
type Schedule struct {
	h      *Harness
	redis  *testenv.Redis
	rng    *rand.Rand
	round  []Kind // the kinds still due in the current round of every kind once
	Faults []Fault

	BrokerFailed  int // broker requests answered with an injected error
	BrokerDelayed int // broker requests held back
}

// NewSchedule returns a schedule over h's processors, redis-server r and
// kfake cluster.
func NewSchedule(h *Harness, r *testenv.Redis, seed uint64) *Schedule {
	return &Schedule{h: h, redis: r, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Run injects steps faults of every kind but those in except: first every
// such kind once, in a seeded order, then kinds drawn at random. A round of
// every kind once that a Run did not finish is finished by the next Run
// first. A kind whose precondition does not hold is preceded by the fault
// that makes it hold (a leave or a zombie with one processor running by a
// join, a join with every slot busy by a leave).
func (s *Schedule) Run(steps int, except ...Kind) {
	var kinds []Kind
	for _, k := range Kinds {
		if !slices.Contains(except, k) {
			kinds = append(kinds, k)
		}
	}
	if len(s.round) == 0 {
		s.round = slices.Clone(kinds)
		s.rng.Shuffle(len(s.round), func(i, j int) { s.round[i], s.round[j] = s.round[j], s.round[i] })
	}
	for range steps {
		var k Kind
		if len(s.round) > 0 {
			k, s.round = s.round[0], s.round[1:]
		} else {
			k = kinds[s.rng.IntN(len(kinds))]
		}
		s.sleep(200, 800)
		s.inject(k)
	}
}

func (s *Schedule) sleep(loMs, hiMs int) {
	time.Sleep(time.Duration(loMs+s.rng.IntN(hiMs-loMs+1)) * time.Millisecond)
}

func (s *Schedule) pick(slots []int) int { return slots[s.rng.IntN(len(slots))] }

func (s *Schedule) free() []int {
	var f []int
	for i := range Slots {
		if s.h.Proc(i) == nil {
			f = append(f, i)
		}
	}
	return f
}

func (s *Schedule) inject(k Kind) {
	h := s.h
	switch run := h.Running(); {
	case (k == Leave || k == Zombie || k == ProcKill) && len(run) < 2:
		s.inject(Join)
		s.sleep(200, 800)
	case k == Join && len(run) == Slots:
		s.inject(Leave)
		s.sleep(200, 800)
	}
	run := h.Running()
	f := Fault{Kind: k}
	switch k {
	case ProcKill:
		slot := s.pick(run)
		f.Hit = s.stopped(slot)
		f.Begin = time.Now()
		h.Kill(slot)
		s.sleep(100, 1000)
		h.Start(slot)
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Join:
		slot := s.pick(s.free())
		s.awaitBatch(run)
		f.Begin = time.Now()
		h.Start(slot)
		// From the new process's start to its first assignment, its join
		// rebalances the group, which waits for the batches the others
		// have in flight.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && h.State(slot).Assignments == 0; time.Sleep(time.Millisecond) {
			for _, o := range run {
				f.Hit = f.Hit || h.State(o).Batch != 0
			}
		}
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Leave:
		slot := s.pick(run)
		f.Hit = s.stopped(slot)
		f.Begin = time.Now()
		h.Stop(slot)
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Zombie:
		slot := s.pick(run)
		f.Hit = s.stopped(slot)
		f.Begin = time.Now()
		// Longer than the session timeout (1.5 s) and the rebalance that
		// follows, so that the others take its partitions over.
		s.sleep(3000, 4500)
		h.Proc(slot).Resume()
		f.Detail = fmt.Sprintf("slot %d", slot)
	case RedisKeep, RedisWipe:
		before := s.awaitRedis(run)
		f.Begin = time.Now()
		s.redis.Kill()
		// A round trip that began before the kill and is still in flight
		// after it (the client retries a cut one against the dead server)
		// was in flight at the kill.
		for _, o := range run {
			if old := h.State(o).RedisOldest; old != 0 && old <= before[o] {
				f.Hit = true
			}
		}
		s.sleep(200, 1500)
		s.redis.Restart(k == RedisKeep)
	case BrokerError:
		f.Begin = time.Now()
		f.Detail, f.Hit = s.brokerErrors()
	case BrokerDelay:
		f.Begin = time.Now()
		f.Detail, f.Hit = s.brokerDelays()
	}
	f.End = time.Now()
	s.Faults = append(s.Faults, f)
}

// awaitWait is how long a fault waits at most for work in flight to strike.
const awaitWait = 500 * time.Millisecond

// stopped waits (up to awaitWait) until the process of slot has a batch in
// flight, pauses it (SIGSTOP) and reports whether it has one: read while
// the process is stopped, that is its state at the fault, which the caller
// then injects (SIGKILL, SIGTERM, or a longer pause).
func (s *Schedule) stopped(slot int) bool {
	for deadline := time.Now().Add(awaitWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if s.h.State(slot).Batch != 0 {
			break
		}
	}
	s.h.Proc(slot).Pause()
	return s.h.State(slot).Batch != 0
}

// awaitBatch waits (up to awaitWait) until a process of run has a batch in
// flight.
func (s *Schedule) awaitBatch(run []int) {
	for deadline := time.Now().Add(awaitWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if slices.ContainsFunc(run, func(o int) bool { return s.h.State(o).Batch != 0 }) {
			return
		}
	}
}

// awaitRedis waits (up to awaitWait) until a process of run has a Redis
// round trip in flight, and returns how many round trips each had begun.
func (s *Schedule) awaitRedis(run []int) map[int]int64 {
	for deadline := time.Now().Add(awaitWait); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if slices.ContainsFunc(run, func(o int) bool { return s.h.State(o).RedisInFlight > 0 }) {
			break
		}
	}
	began := map[int]int64{}
	for _, o := range run {
		began[o] = s.h.State(o).RedisStarted
	}
	return began
}

// busy reports, when a broker fault answers req, whether it strikes work
// in flight: req is a processor's produce (outputs, the DLQ, settled
// periods: the trace's producer writes only the input topics) or offset
// commit, or a processor has a batch in flight. It runs on kfake's
// goroutine; reading the state files does not block it for long.
func (s *Schedule) busy(req kmsg.Request) bool {
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		for _, t := range r.Topics {
			if !slices.Contains(s.h.Topics.Inputs(), t.Topic) {
				return true
			}
		}
	case *kmsg.OffsetCommitRequest:
		return true // only the processors' group commits
	}
	for i := range Slots {
		if s.h.State(i).Batch != 0 {
			return true
		}
	}
	return false
}

// brokerKeys are the requests faults are injected into.
var brokerKeys = []struct {
	key  kmsg.Key
	name string
	err  *kerr.Error // retriable: the clients retry, as they would against a real broker
}{
	{kmsg.Fetch, "Fetch", kerr.NotLeaderForPartition},
	{kmsg.Produce, "Produce", kerr.NotLeaderForPartition},
	{kmsg.OffsetCommit, "OffsetCommit", kerr.CoordinatorLoadInProgress},
}

// brokerErrors fails the next few requests of one or two kinds. It
// reports whether an injected error struck work in flight (busy).
func (s *Schedule) brokerErrors() (string, bool) {
	var faults []kfake.Fault
	var names []string
	var struck atomic.Int64
	// kfake asks When for every entity of a request its selectors match,
	// also once the fault's count is spent; counting the requests here,
	// When accepts exactly the n requests the fault answers.
	when := func(n int) func(kmsg.Request) bool {
		accepted := map[kmsg.Request]bool{}
		return func(req kmsg.Request) bool {
			switch {
			case accepted[req]:
				return true
			case len(accepted) == n:
				return false
			}
			accepted[req] = true
			if s.busy(req) {
				struck.Add(1)
			}
			return true
		}
	}
	for _, i := range s.rng.Perm(len(brokerKeys))[:1+s.rng.IntN(2)] {
		bk := brokerKeys[i]
		n := 3 + s.rng.IntN(20)
		faults = append(faults, kfake.Fault{Keys: []kmsg.Key{bk.key}, Err: bk.err, Count: n, When: when(n)})
		names = append(names, fmt.Sprintf("%d %s (%s)", n, bk.name, bk.err.Message))
	}
	fh := s.h.Kafka.Fault(faults...)
	s.sleep(1000, 2500)
	fh.Remove()
	s.BrokerFailed += fh.Hits()
	return strings.Join(names, ", ") + fmt.Sprintf("; %d answered, %d on work in flight", fh.Hits(), struck.Load()), struck.Load() > 0
}

// brokerDelays holds back the next few requests of one kind.
func (s *Schedule) brokerDelays() (string, bool) {
	bk := brokerKeys[s.rng.IntN(len(brokerKeys))]
	n := int64(3 + s.rng.IntN(15))
	delay := time.Duration(100+s.rng.IntN(400)) * time.Millisecond
	c := s.h.Kafka.Fake()
	var held atomic.Int64
	var done atomic.Bool
	var struck atomic.Int64
	c.ControlKey(int16(bk.key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if done.Load() || held.Add(1) > n {
			c.DropControl()
			return nil, nil, false
		}
		if s.busy(req) {
			struck.Add(1)
		}
		c.SleepControl(func() { time.Sleep(delay) })
		return nil, nil, false // then handled as usual
	})
	s.sleep(1000, 2500)
	done.Store(true)
	got := min(held.Load(), n)
	s.BrokerDelayed += int(got)
	return fmt.Sprintf("%d %s by %s; %d held, %d on work in flight", n, bk.name, delay, got, struck.Load()), struck.Load() > 0
}

// Counts returns how many faults of each kind were injected.
func (s *Schedule) Counts() map[Kind]int {
	c := map[Kind]int{}
	for _, f := range s.Faults {
		c[f.Kind]++
	}
	return c
}

// Hits returns, per kind, how many faults struck work in flight: a batch
// between its WAL append and its offset commit in the process killed,
// terminated or paused (read while it is stopped), in a running process
// when another joins, or when an injected broker error or delay answered a
// request; a Redis round trip cut by a Redis kill; or a processor's own
// produce or commit answered with an injected error or delay.
func (s *Schedule) Hits() map[Kind]int {
	c := map[Kind]int{}
	for _, f := range s.Faults {
		if f.Hit {
			c[f.Kind]++
		}
	}
	return c
}

// Recovery returns, per kind, the recovery times measured (see
// progress.recovery) and how many faults had nothing left to recover.
func (s *Schedule) Recovery() (map[Kind][]time.Duration, map[Kind]int) {
	times, idle := map[Kind][]time.Duration{}, map[Kind]int{}
	for _, f := range s.Faults {
		if d, ok := s.h.monitor.recovery(f.Begin, f.End); ok {
			times[f.Kind] = append(times[f.Kind], d)
		} else {
			idle[f.Kind]++
		}
	}
	for _, ds := range times {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	}
	return times, idle
}
