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

	"github.com/rostrumhq/rostrum/internal/testenv"
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
}

// Schedule injects faults drawn from a seeded generator. The sequence of
// faults and their parameters is a function of the seed; only the moments
// depend on the machine.
type Schedule struct {
	h      *Harness
	redis  *testenv.Redis
	rng    *rand.Rand
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
// such kind once, in a seeded order, then kinds drawn at random. A kind
// whose precondition does not hold is preceded by the fault that makes it
// hold (a leave or a zombie with one processor running by a join, a join
// with every slot busy by a leave).
func (s *Schedule) Run(steps int, except ...Kind) {
	var kinds []Kind
	for _, k := range Kinds {
		if !slices.Contains(except, k) {
			kinds = append(kinds, k)
		}
	}
	order := slices.Clone(kinds)
	s.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for i := range steps {
		k := kinds[s.rng.IntN(len(kinds))]
		if i < len(order) {
			k = order[i]
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
	f := Fault{Kind: k, Begin: time.Now()}
	switch k {
	case ProcKill:
		slot := s.pick(run)
		h.Kill(slot)
		s.sleep(100, 1000)
		h.Start(slot)
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Join:
		slot := s.pick(s.free())
		h.Start(slot)
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Leave:
		slot := s.pick(run)
		h.Stop(slot)
		f.Detail = fmt.Sprintf("slot %d", slot)
	case Zombie:
		slot := s.pick(run)
		p := h.Proc(slot)
		p.Pause()
		// Longer than the session timeout (1.5 s) and the rebalance that
		// follows, so that the others take its partitions over.
		s.sleep(3000, 4500)
		p.Resume()
		f.Detail = fmt.Sprintf("slot %d", slot)
	case RedisKeep:
		s.redis.Kill()
		s.sleep(200, 1500)
		s.redis.Restart(true)
	case RedisWipe:
		s.redis.Kill()
		s.sleep(200, 1500)
		s.redis.Restart(false)
	case BrokerError:
		f.Detail = s.brokerErrors()
	case BrokerDelay:
		f.Detail = s.brokerDelays()
	}
	f.End = time.Now()
	s.Faults = append(s.Faults, f)
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

// brokerErrors fails the next few requests of one or two kinds.
func (s *Schedule) brokerErrors() string {
	var faults []kfake.Fault
	var names []string
	for _, i := range s.rng.Perm(len(brokerKeys))[:1+s.rng.IntN(2)] {
		bk := brokerKeys[i]
		n := 3 + s.rng.IntN(20)
		faults = append(faults, kfake.Fault{Keys: []kmsg.Key{bk.key}, Err: bk.err, Count: n})
		names = append(names, fmt.Sprintf("%d %s (%s)", n, bk.name, bk.err.Message))
	}
	fh := s.h.Kafka.Fault(faults...)
	s.sleep(1000, 2500)
	fh.Remove()
	s.BrokerFailed += fh.Hits()
	return strings.Join(names, ", ") + fmt.Sprintf("; %d answered", fh.Hits())
}

// brokerDelays holds back the next few requests of one kind.
func (s *Schedule) brokerDelays() string {
	bk := brokerKeys[s.rng.IntN(len(brokerKeys))]
	n := int64(3 + s.rng.IntN(15))
	delay := time.Duration(100+s.rng.IntN(400)) * time.Millisecond
	c := s.h.Kafka.Fake()
	var held atomic.Int64
	var done atomic.Bool
	c.ControlKey(int16(bk.key), func(kmsg.Request) (kmsg.Response, error, bool) {
		if done.Load() || held.Add(1) > n {
			c.DropControl()
			return nil, nil, false
		}
		c.SleepControl(func() { time.Sleep(delay) })
		return nil, nil, false // then handled as usual
	})
	s.sleep(1000, 2500)
	done.Store(true)
	got := min(held.Load(), n)
	s.BrokerDelayed += int(got)
	return fmt.Sprintf("%d %s by %s; %d held", n, bk.name, delay, got)
}

// Counts returns how many faults of each kind were injected.
func (s *Schedule) Counts() map[Kind]int {
	c := map[Kind]int{}
	for _, f := range s.Faults {
		c[f.Kind]++
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
