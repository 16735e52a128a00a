package chaos

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/boardmodel"
	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// Decay boards under chaos (boards.yaml's gifts-decay and
// room-gifts-decay; docs/DESIGN.md §8 "Total boards and decay", "Rolling
// boards with decay"). Their state depends on the wall clock through the
// base k, which every Apply and every expiry tick moves to floor((now −
// grace − epoch)/H) − 1. The test places their epoch and grace (DecayAtEnv,
// read by Boards in every processor) so that the target moves once, from j to
// j+1, at a boundary B while the processors run (the test waits for B if
// they finish first): every processor that applies or ticks after B
// rebases, exactly once in Redis, whatever was killed or wiped around it.
//
// The trace's fresh events are at most 2 hours older than its now and B
// less than an hour after it, so with a half-life of 3 hours every
// fresh event is in half-life j+1: before B it adds 2·M·v, the rebase
// halves it exactly, after B it adds M·v. The sums at the end are then the
// model's, recorded in partition order after a Rebase at the end of the
// run, whatever the interleaving of batches and rebases; the only events
// below the base are the trace's late ones (8 days old), late by record
// time and in the DLQ. The later checks (DecayCheck.At) rebase at chosen
// times, where the floor of a rebase does drop bits, in Redis and in the
// model alike.
//
// The comparison is exact: the base, every member's integer sum S (and on
// the rolling board every slice sum, and the window sum, which must be
// the sum of its slices), then the decayed reads through board.Store at a
// fixed time t0 + 2H (a whole number of half-lives, so that the power of
// two is exact in both). Check runs CheckDecay on the decay boards of its
// Input and compares the others with the model of checkboards.go
// (SplitDecay), which would need the same rebase.

// DecayAtEnv carries the moment B (Unix ms) at which the decay boards'
// base target moves to every processor process: Boards reads it
// (decayPlace).
const DecayAtEnv = "ROSTRUM_CHAOS_DECAY_AT"

// decayAtFromEnv returns the moment DecayAtEnv sets; zero when unset.
func decayAtFromEnv() (time.Time, error) {
	s := os.Getenv(DecayAtEnv)
	if s == "" {
		return time.Time{}, nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("chaos: %s=%q: want Unix milliseconds", DecayAtEnv, s)
	}
	return time.UnixMilli(ms).UTC(), nil
}

// decayPlace returns the epoch and grace that move the base target of a
// decay board with half-life h at b: b = epoch + (j+2)·h + grace. The epoch
// of a rolling board is a whole slice (minutes here) and h a whole number
// of them, so the grace (1 s to 1 min) takes the seconds of b; j = 1000
// keeps every event after the epoch.
func decayPlace(b time.Time, h time.Duration) (epoch time.Time, grace time.Duration) {
	m := b.Add(-time.Second).Truncate(time.Minute)
	return m.Add(-1002 * h), b.Sub(m)
}

// SplitDecay returns the boards checkboards.go compares and the decay
// boards, which CheckDecay compares.
func SplitDecay(bs []*boarddef.Board) (plain, decay []*boarddef.Board) {
	for _, b := range bs {
		if b.HalfLife() > 0 {
			decay = append(decay, b)
		} else {
			plain = append(plain, b)
		}
	}
	return plain, decay
}

// DecayCheck compares the decay boards with their model.
type DecayCheck struct {
	Boards []*boarddef.Board
	Env    string
	model  *boardmodel.Model

	Late       int // input records with an event late on a decay board
	LateInDLQ  int // of those, in the DLQ with a reason saying late
	Compared   int // sums, slice sums and read entries compared equal
	Rebases    []int64
	Bases      []int64
	Mismatches []int // per board
}

// RebaseWatch counts the rebases Redis makes while the processors run: it
// samples each decay board's rebase count (the base hash's field
// "rebases", which a wipe resets) and adds every increase.
type RebaseWatch struct {
	mu     sync.Mutex
	counts []int64
	stop   chan struct{}
	done   chan struct{}
}

// WatchRebases starts sampling the redis-server at addr every 100 ms until
// Stop. It skips a sample while the server does not accept connections (it
// is being restarted), which the client would log at every attempt.
func WatchRebases(addr, env string, bs []*boarddef.Board) *RebaseWatch {
	w := &RebaseWatch{counts: make([]int64, len(bs)), stop: make(chan struct{}), done: make(chan struct{})}
	last := make([]int64, len(bs))
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	go func() {
		defer close(w.done)
		defer rc.Close()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
				c.Close()
				w.sample(rc, env, bs, last)
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// sample adds each board's rebases since the last sample (last).
func (w *RebaseWatch) sample(rc redis.UniversalClient, env string, bs []*boarddef.Board, last []int64) {
	for i, b := range bs {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		n, err := rc.HGet(ctx, baseKey(env, b), "rebases").Int64()
		cancel()
		if err == redis.Nil {
			n, err = 0, nil
		}
		if err != nil {
			continue // Redis went down: sample again
		}
		w.mu.Lock()
		if n > last[i] {
			w.counts[i] += n - last[i]
		}
		w.mu.Unlock()
		last[i] = n
	}
}

// Seen returns the rebases seen so far per board.
func (w *RebaseWatch) Seen() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.counts)
}

// Stop ends the sampling and returns the rebases seen per board.
func (w *RebaseWatch) Stop() []int64 {
	close(w.stop)
	<-w.done
	return w.Seen()
}

func decayPrefix(env string, b *boarddef.Board) string {
	return "rostrum:" + env + ":board:{" + b.Name() + "}:"
}

func baseKey(env string, b *boarddef.Board) string {
	if b.Kind() == boarddef.Total {
		return decayPrefix(env, b) + "T:b"
	}
	return decayPrefix(env, b) + "b"
}

// CheckDecay feeds the decay boards' model with every input record in
// partition and offset order, after a rebase at now (the end of the run),
// checks that each record with a late event on a decay board is in the DLQ
// with a reason saying late, and compares the boards (compare).
func CheckDecay(ctx context.Context, rc redis.UniversalClient, env string, bs []*boarddef.Board, tr []trace.Record, inputs, dlq []*kgo.Record, now time.Time, rep *Report) (*DecayCheck, error) {
	events := map[string][]codec.Event{}
	for _, r := range tr {
		if r.Good() && slices.ContainsFunc(r.Events, func(e codec.Event) bool { return e.Type.Board() }) {
			events[string(r.Value)] = r.Events
		}
	}
	d := &DecayCheck{Boards: bs, Env: env, model: boardmodel.New(bs), Rebases: make([]int64, len(bs)), Bases: make([]int64, len(bs)), Mismatches: make([]int, len(bs))}
	d.model.Rebase(now)
	recs := slices.Clone(inputs)
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	reasons := map[string]string{}
	for _, r := range dlq {
		for _, h := range r.Headers {
			if h.Key == "rostrum-error" {
				reasons[string(r.Value)] = string(h.Value)
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range recs {
		evs, ok := events[string(r.Value)]
		if !ok {
			continue
		}
		// The model answers for events of boards it does not keep too
		// (removals from the other boards): only the decay boards' count.
		late := slices.ContainsFunc(d.model.Record(r.Topic, r.Partition, r.Offset, r.Timestamp, evs), func(l boardmodel.LateEvent) bool {
			return slices.ContainsFunc(bs, func(b *boarddef.Board) bool { return b.Name() == l.Board })
		})
		if !late || seen[string(r.Value)] {
			continue
		}
		seen[string(r.Value)] = true
		d.Late++
		reason, ok := reasons[string(r.Value)]
		switch {
		case !ok:
			d.fail(rep, -1, "decay: record with a late event missing from the DLQ: %.80q", r.Value)
		case !strings.Contains(reason, "late"):
			d.fail(rep, -1, "decay: record with a late event in the DLQ for another reason %q: %.80q", reason, r.Value)
		default:
			d.LateInDLQ++
		}
	}
	return d, d.compare(ctx, rc, rep)
}

// At expires and rebases the decay boards at at, in Redis (Store.Expire)
// and in the model, and compares them again. It returns what Redis's
// expiry did (Rebased: the sums a rebase rewrote).
func (d *DecayCheck) At(ctx context.Context, rc redis.UniversalClient, at time.Time, rep *Report) (board.ExpireResult, error) {
	res, err := board.NewStore(rc, d.Env, d.Boards).Expire(ctx, at)
	if err != nil {
		return res, fmt.Errorf("chaos: expire decay boards at %s: %w", at, err)
	}
	d.model.Expire(at)
	return res, d.compare(ctx, rc, rep)
}

// fail counts a mismatch on board bi (-1: none in particular).
func (d *DecayCheck) fail(rep *Report, bi int, format string, args ...any) {
	if bi >= 0 {
		d.Mismatches[bi]++
	}
	rep.Mismatch++
	rep.problem(format, args...)
}

// compare compares every decay board's base, sums and decayed reads with
// the model's.
func (d *DecayCheck) compare(ctx context.Context, rc redis.UniversalClient, rep *Report) error {
	for bi, b := range d.Boards {
		base, err := rc.HMGet(ctx, baseKey(d.Env, b), "k", "rebases").Result()
		if err != nil {
			return fmt.Errorf("chaos: read base of %s: %w", b.Name(), err)
		}
		k, _ := strconv.ParseInt(fmt.Sprint(base[0]), 10, 64)
		n, _ := strconv.ParseInt(fmt.Sprint(base[1]), 10, 64)
		d.Bases[bi], d.Rebases[bi] = k, n
		var wantK int64
		var ok bool
		var wantSums map[string]int64
		if b.Kind() == boarddef.Total {
			wantK, ok = d.model.Base(bi)
			wantSums = d.model.Sums(bi)
		} else {
			wantK, ok = d.model.DecayBase(bi)
			wantSums = d.model.WindowSums(bi)
		}
		if !ok || base[0] == nil || k != wantK {
			d.fail(rep, bi, "decay board %s: base %v in Redis, %d in the model", b.Name(), base[0], wantK)
			continue
		}
		gotSums, err := d.sums(ctx, rc, b)
		if err != nil {
			return err
		}
		d.compareSums(rep, bi, b.Name()+" sums", gotSums, wantSums)
		if b.Kind() == boarddef.Rolling {
			if err := d.compareSlices(ctx, rc, rep, bi, b, gotSums); err != nil {
				return err
			}
		}
		// Decayed reads at t0 + 2H: an exact power of two in both.
		at := b.Epoch().Add(time.Duration(k+2) * b.HalfLife())
		st := board.NewStore(rc, d.Env, d.Boards)
		st.SetClock(func() time.Time { return at })
		window := ""
		if ws := b.Windows(); len(ws) > 0 {
			window = ws[0]
		}
		got, err := readRanking(ctx, st, b.Name(), "", window)
		if err != nil {
			return err
		}
		var want []boardmodel.Entry
		if b.Kind() == boarddef.Total {
			want = d.model.TotalRanking(bi, at)
		} else {
			want = d.model.RollingDecayRanking(bi, at)
		}
		if len(got) != len(want) {
			d.fail(rep, bi, "decay board %s read at %s: %d members in Redis, %d in the model", b.Name(), at.Format(time.RFC3339), len(got), len(want))
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				d.fail(rep, bi, "decay board %s read at %s: rank %d is %+v in Redis, %+v in the model", b.Name(), at.Format(time.RFC3339), i+1, got[i], want[i])
				break
			}
			d.Compared++
		}
	}
	return nil
}

// sums reads a decay board's sums S by member: "S reached" in a total
// board's T:m, "reached S" in a rolling board's m.
func (d *DecayCheck) sums(ctx context.Context, rc redis.UniversalClient, b *boarddef.Board) (map[string]int64, error) {
	key, field := decayPrefix(d.Env, b)+"T:m", 0
	if b.Kind() == boarddef.Rolling {
		key, field = decayPrefix(d.Env, b)+"m", 1
	}
	all, err := rc.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, fmt.Errorf("chaos: read sums of %s: %w", b.Name(), err)
	}
	out := map[string]int64{}
	for member, v := range all {
		f := strings.Fields(v)
		if len(f) != 2 {
			return nil, fmt.Errorf("chaos: %s: state %q of %s is not two numbers", b.Name(), v, member)
		}
		s, err := strconv.ParseInt(f[field], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("chaos: %s: state %q of %s: %w", b.Name(), v, member, err)
		}
		out[member] = s
	}
	return out, nil
}

// compareSlices compares a rolling decay board's slice sums with the
// model's, and checks that each window sum is the sum of its slices.
func (d *DecayCheck) compareSlices(ctx context.Context, rc redis.UniversalClient, rep *Report, bi int, b *boarddef.Board, window map[string]int64) error {
	prefix := decayPrefix(d.Env, b) + "s:"
	keys, err := scanKeys(ctx, rc, prefix+"*")
	if err != nil {
		return fmt.Errorf("chaos: scan slices of %s: %w", b.Name(), err)
	}
	got := map[int64]map[string]int64{}
	summed := map[string]int64{}
	for _, key := range keys {
		s, err := strconv.ParseInt(strings.TrimPrefix(key, prefix), 10, 64)
		if err != nil {
			continue // a slice's id set
		}
		all, err := rc.HGetAll(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("chaos: read slice %s: %w", key, err)
		}
		for member, v := range all {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("chaos: slice %s: %s is %q", key, member, v)
			}
			if got[s] == nil {
				got[s] = map[string]int64{}
			}
			got[s][member] = n
			summed[member] += n
		}
	}
	want := d.model.SliceSums(bi)
	for s := range want {
		d.compareSums(rep, bi, fmt.Sprintf("%s slice %d", b.Name(), s), got[s], want[s])
	}
	for s, c := range got {
		if _, ok := want[s]; !ok && len(c) > 0 {
			d.fail(rep, bi, "decay board %s: slice %d held in Redis (%d members), not in the model's window", b.Name(), s, len(c))
		}
	}
	for member, w := range window {
		if summed[member] != w {
			d.fail(rep, bi, "decay board %s: window sum of %s is %d, its slices sum to %d", b.Name(), member, w, summed[member])
		}
	}
	return nil
}

func (d *DecayCheck) compareSums(rep *Report, bi int, what string, got, want map[string]int64) {
	for member, w := range want {
		g, ok := got[member]
		switch {
		case !ok:
			d.fail(rep, bi, "decay %s: %s (S %d) missing from Redis", what, member, w)
		case g != w:
			d.fail(rep, bi, "decay %s: %s has S %d in Redis, %d in the model", what, member, g, w)
		default:
			d.Compared++
		}
	}
	for member, g := range got {
		if _, ok := want[member]; !ok {
			d.fail(rep, bi, "decay %s: %s (S %d) in Redis, not in the model", what, member, g)
		}
	}
}
