package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
)

// TestDLQInspectRedrive runs the processor on three records it rejects,
// inspects its DLQ, redrives them (a dry run first), and, since they are
// still invalid, finds their new DLQ copies marked as rejected again.
func TestDLQInspectRedrive(t *testing.T) {
	k := testenv.StartKafka(t)
	createTopics(t, k, "test")
	r := testenv.StartRedis(t)
	topics := processor.TopicsFor("", "test")
	ts := time.Now().UnixMilli()
	for i := range 3 {
		k.Produce(topics.RTC, []byte("r-1"), []byte(fmt.Sprintf(`{"room_id":"r-1","user_id":"u-%d","type":"volume","value":1000,"ts":%d}`, i, ts)))
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Main(ctx, []string{"run", "--brokers", k.Seeds[0], "--redis", r.Addr, "--env", "test",
			"--wal-dir", t.TempDir(), "--http", "", "--log-level", "error"}, io.Discard, io.Discard)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	waitRecords := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); len(k.ReadAll(topics.DLQ)) < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the DLQ holds %d records, want %d", len(k.ReadAll(topics.DLQ)), n)
			}
		}
	}
	waitRecords(3)

	dlqCmd := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := Main(context.Background(), append(append([]string{"dlq"}, args[0], "--brokers", k.Seeds[0], "--env", "test"), args[1:]...), &out, io.Discard)
		return out.String(), err
	}
	out, err := dlqCmd("inspect", "--sample", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"test.callbacks.dlq: 3 records selected, 0 of them redriven before, 0 rejected again",
		"by reason class:\n  value                                    3\n",
		"by source topic:\n  test.callbacks.rtc                       3\n",
		"/0  at ", "  rostrum-error: value: volume must be 0..999, got 1000\n", "  rostrum-topic: test.callbacks.rtc\n",
		"  rostrum-offset: 0\n", `value: {"room_id":"r-1","user_id":"u-0"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "--- ") != 1 {
		t.Errorf("--sample 1 printed %d records:\n%s", strings.Count(out, "--- "), out)
	}

	if _, err := dlqCmd("redrive"); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Errorf("redrive without a selection: %v, want a refusal naming --all", err)
	}
	out, err = dlqCmd("redrive", "--reason", "value", "--dry-run")
	if err != nil || !strings.Contains(out, "3 records would be redriven (dry run)") || !strings.Contains(out, "/0 to test.callbacks.rtc (key \"r-1\", value: volume must be 0..999, got 1000)") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, err = dlqCmd("redrive", "--reason", "value")
	if err != nil || !strings.Contains(out, "3 records redriven") {
		t.Fatalf("redrive: %v\n%s", err, out)
	}
	// Three markers, then the processor's three new copies.
	waitRecords(9)
	out, err = dlqCmd("inspect", "--topic", topics.RTC)
	if err != nil || !strings.Contains(out, "6 records selected, 3 of them redriven before, 3 rejected again") {
		t.Fatalf("inspect after the redrive: %v\n%s", err, out)
	}
	out, err = dlqCmd("redrive", "--reason", "value", "--dry-run")
	// Only the new copies (offsets 3 to 8, beside the markers), not the
	// redriven originals (0 to 2).
	if err != nil || !strings.Contains(out, "3 records would be redriven") ||
		strings.Contains(out, "/0 to ") || strings.Contains(out, "/1 to ") || strings.Contains(out, "/2 to ") {
		t.Fatalf("second dry run (only the new copies): %v\n%s", err, out)
	}
}
