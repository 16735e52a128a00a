package wal

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// crashChildEnv, when set, makes TestKill9 the child process: it appends to
// the log in that directory until it is killed.
const crashChildEnv = "ROSTRUM_WAL_CRASH_CHILD_DIR"

// crashBatchLen is the size of batch seq in the kill -9 test: up to 64
// records, so that a kill often lands inside a write.
func crashBatchLen(seq uint64) int { return int(seq*7%64) + 1 }

// TestKill9 SIGKILLs a child process that appends with SyncEveryAppend at
// random moments, then checks that every batch the child acknowledged is in
// the log, intact, and that the log takes appends again.
func TestKill9(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	deadline := time.Now().Add(30 * time.Second)
	var maxAcked uint64
	core, logs := observer.New(zapcore.WarnLevel)
	for i := 0; i < 20 && time.Now().Before(deadline); i++ {
		acked, stderr := runAndKill(t, dir, rng, i%4 == 3)
		if acked < maxAcked && acked != 0 {
			t.Fatalf("iteration %d: child acknowledged %d, below an earlier %d", i, acked, maxAcked)
		}
		maxAcked = max(maxAcked, acked)

		l, err := Open(dir, Config{Logger: zap.New(core)})
		if err != nil {
			t.Fatalf("iteration %d: reopen after kill: %v\nchild stderr:\n%s", i, err, stderr)
		}
		last := l.LastSeq()
		if last < maxAcked {
			t.Fatalf("iteration %d: LastSeq %d, but the child acknowledged %d", i, last, maxAcked)
		}
		next := uint64(1)
		err = l.Replay(0, func(seq uint64, recs []Record) error {
			if seq != next {
				return fmt.Errorf("seq %d, want %d", seq, next)
			}
			if !sameRecords(recs, testBatch(seq, crashBatchLen(seq))) {
				return fmt.Errorf("batch %d differs", seq)
			}
			next++
			return nil
		})
		if err != nil || next != last+1 {
			t.Fatalf("iteration %d: replay: %v, ended at %d, want %d", i, err, next-1, last)
		}
		if seq, err := l.Append(testBatch(last+1, crashBatchLen(last+1))); err != nil || seq != last+1 {
			t.Fatalf("iteration %d: append after kill: %d, %v", i, seq, err)
		}
		maxAcked = last + 1
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	segs, err := Inspect(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d batches in %d segments survived the kills; %d torn tails repaired",
		maxAcked, len(segs), logs.FilterMessage("wal: truncated torn tail").Len())
}

// runAndKill starts the child, kills it at a random moment (early: maybe
// before it acknowledged anything, even during Open's repair) and returns the
// highest seq it acknowledged.
func runAndKill(t *testing.T, dir string, rng *rand.Rand, early bool) (uint64, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acks := make(chan uint64, 1024)
	go func() {
		defer close(acks)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
				if seq, err := strconv.ParseUint(s, 10, 64); err == nil {
					acks <- seq
				}
			}
		}
	}()
	var acked uint64
	delay := time.Duration(rng.Int64N(int64(100 * time.Millisecond)))
	if !early {
		// Wait for the first acknowledgement, then a little more.
		select {
		case seq, ok := <-acks:
			if !ok {
				cmd.Wait()
				t.Fatalf("child ended before appending:\n%s", stderr.String())
			}
			acked = seq
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not append within 20s:\n%s", stderr.String())
		}
	}
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for seq := range acks { // the pipe ends when the child is gone
		acked = max(acked, seq)
	}
	cmd.Wait()
	return acked, stderr.String()
}

// crashChild appends batches to the log in dir, printing each acknowledged
// seq, until it is killed (or, should the parent be gone, for 30 seconds).
func crashChild(t *testing.T, dir string) {
	l, err := Open(dir, Config{SegmentBytes: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	stop := time.Now().Add(30 * time.Second)
	for time.Now().Before(stop) {
		seq := l.LastSeq() + 1
		got, err := l.Append(testBatch(seq, crashBatchLen(seq)))
		if err != nil || got != seq {
			fmt.Fprintf(os.Stderr, "append %d: got %d, %v\n", seq, got, err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stdout, "ack %d\n", seq)
	}
	l.Close()
	t.Log("child was not killed")
}
