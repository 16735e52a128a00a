package chaos

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
)

// setDecayAt makes the decay boards of boards.yaml move their base target
// at B, after rounded up to a whole second, in this process and in every
// processor it starts (DecayAtEnv), and returns B.
func setDecayAt(t *testing.T, after time.Time) time.Time {
	t.Helper()
	b := after.Truncate(time.Second)
	if b.Before(after) {
		b = b.Add(time.Second)
	}
	t.Setenv(DecayAtEnv, strconv.FormatInt(b.UnixMilli(), 10))
	bs, err := Boards()
	if err != nil {
		t.Fatal(err)
	}
	if _, decay := SplitDecay(bs); len(decay) == 0 {
		t.Fatal("boards.yaml has no decay board")
	}
	return b
}

// waitDecayBoundary waits until the processors' expiry tick (5 s) has run
// after B, when the run was faster than B.
func waitDecayBoundary(b time.Time) {
	if d := time.Until(b.Add(6 * time.Second)); d > 0 {
		time.Sleep(d)
	}
}

// checkDecayAfterFaults compares the decay boards with their model once the
// schedule's faults are over and the group has caught up, before the
// settlement's Redis wipe: the state the rebase at B made under faults
// (the wipe then rebuilds it from the WALs, in the moved base, which
// checkDecayBoards compares). It fails the test when no rebase happened
// while the processors ran, unless Redis was wiped within a tick (5 s) of
// B: the first write after a wipe takes the target as the base, with
// nothing to rebase.
func checkDecayAfterFaults(t *testing.T, rc redis.UniversalClient, decay []*boarddef.Board, h *Harness, s *Schedule, now, moved time.Time, w *RebaseWatch) {
	t.Helper()
	var rep Report
	dc, err := CheckDecay(context.Background(), rc, EnvName, decay, h.In.Trace, h.Inputs(), h.Kafka.ReadAll(h.Topics.DLQ), time.Now(), &rep)
	if err != nil {
		t.Fatal(err)
	}
	seen := w.Seen()
	t.Logf("decay boards: base target moved at %s, %v into the run", moved.Format("15:04:05"), moved.Sub(now).Round(time.Second))
	for i, b := range decay {
		t.Logf("decay board %s after the faults: %d rebases while the processors ran (seen in Redis), base %d, %d held since the last wipe, %d mismatches", b.Name(), seen[i], dc.Bases[i], dc.Rebases[i], dc.Mismatches[i])
	}
	for _, p := range rep.Problems {
		t.Error(p)
	}
	wiped := slices.ContainsFunc(s.Faults, func(f Fault) bool {
		return f.Kind == RedisWipe && f.End.After(moved.Add(-6*time.Second)) && f.Begin.Before(moved.Add(6*time.Second))
	})
	for i, d := range decay {
		switch {
		case seen[i] == 0 && wiped:
			t.Logf("decay board %s: no rebase while the processors ran: Redis was wiped around %s", d.Name(), moved.Format("15:04:05"))
		case seen[i] == 0:
			t.Errorf("decay board %s: no rebase while the processors ran (the base target moved at %s)", d.Name(), moved.Format("15:04:05"))
		}
	}
}

// checkDecayBoards logs how Check found the decay boards at the end of the
// run (rep.Decay), compares them with their model after rebases at chosen
// times (4 hours on: one more rebase, which floors; a day on: seven
// half-lives more, and the rolling window empty), and logs the figures.
func checkDecayBoards(t *testing.T, rc redis.UniversalClient, decay []*boarddef.Board, now time.Time, seen []int64, rep *Report) {
	t.Helper()
	ctx := context.Background()
	dc := rep.Decay
	if dc == nil {
		t.Fatal("Check compared no decay board")
	}
	for i, b := range decay {
		t.Logf("decay board %s at the end: %d rebases while the processors ran (seen in Redis), base %d, %d held since the last wipe, %d mismatches", b.Name(), seen[i], dc.Bases[i], dc.Rebases[i], dc.Mismatches[i])
	}
	for _, d := range []time.Duration{4 * time.Hour, 25 * time.Hour} {
		res, err := dc.At(ctx, rc, now.Add(d), rep)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("  decay check at +%v: bases %v, rebases held %v, %d sums rewritten, %d slice subtractions; mismatches so far %v", d, dc.Bases, dc.Rebases, res.Rebased, res.Subtracted, dc.Mismatches)
	}
	t.Logf("decay boards: %d records with a late event (%d in the DLQ, reason late), %d sums and reads compared equal",
		dc.Late, dc.LateInDLQ, dc.Compared)
	if dc.Late == 0 || dc.Compared == 0 {
		t.Errorf("decay boards: %d late records, %d comparisons: the check covered nothing", dc.Late, dc.Compared)
	}
}
