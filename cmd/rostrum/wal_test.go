package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/wal"
)

func writeWAL(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Now().UnixMilli()
	var recs []wal.Record
	for i := 0; i < 10; i++ {
		room := fmt.Sprintf("r-%d", i%2)
		v := fmt.Sprintf(`{"room_id":%q,"user_id":"u-%d","type":"volume","value":%d,"ts":%d}`, room, i, 100+i, ts+int64(i))
		recs = append(recs, wal.Record{Topic: "test.callbacks.rtc", Partition: int32(i % 2), Offset: int64(i / 2), Timestamp: time.Now(), Key: []byte(room), Value: []byte(v)})
	}
	if _, err := l.Append(recs[:6]); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recs[6:]); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWALInspect(t *testing.T) {
	dir := writeWAL(t)
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"wal", "inspect", "--wal-dir", dir, "--room", "r-1"}, &out, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"2 batches (seq 1..2), 10 records", "test.callbacks.rtc/0", "0..4  (5 records)", `"room_id":"r-1","user_id":"u-9"`} {
		if !strings.Contains(s, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, `"room_id":"r-0"`) {
		t.Errorf("--room r-1 printed a record of r-0:\n%s", s)
	}
}

// TestWALReplay replays a WAL into an empty Redis, then again: the second
// run changes nothing (the watermarks skip what is applied).
func TestWALReplay(t *testing.T) {
	dir := writeWAL(t)
	r := testenv.StartRedis(t)
	run := func() string {
		var out bytes.Buffer
		err := Main(context.Background(), []string{"wal", "replay", "--wal-dir", dir, "--redis", r.Addr, "--env", "test", "--log-level", "error"}, &out, new(bytes.Buffer))
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	first := run()
	if !strings.Contains(first, "replayed 2 batches, 10 records, 10 events (0 rejected) into 2 rooms; 2 stable lists changed") {
		t.Fatalf("first replay: %s", first)
	}
	c := r.Client()
	top, err := c.ZRangeArgs(context.Background(), redis.ZRangeArgs{Key: sink.RoomKeys("test", "r-1").Ranking, Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil || strings.Join(top, ",") != "u-9,u-7,u-5,u-3,u-1" {
		t.Fatalf("ranking after replay: %v %v", top, err)
	}
	if second := run(); !strings.Contains(second, "0 stable lists changed") {
		t.Fatalf("second replay: %s", second)
	}
	again, _ := c.ZRangeArgs(context.Background(), redis.ZRangeArgs{Key: sink.RoomKeys("test", "r-1").Ranking, Start: 0, Stop: -1, Rev: true}).Result()
	if strings.Join(again, ",") != strings.Join(top, ",") {
		t.Fatalf("second replay changed the ranking: %v", again)
	}
}

// TestWALReplayBoards replays a WAL holding gifts with a config file that
// declares boards: the boards count each gift once, however often the log
// is replayed.
func TestWALReplayBoards(t *testing.T) {
	ts := time.Now().UnixMilli()
	dir := giftWAL(t, 6, 2, ts)
	cfg := filepath.Join(t.TempDir(), "rostrum.yaml")
	yaml := "boards:\n  - {name: gifts-day, events: [gift], member: user_id, kind: periodic, period: day}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	r := testenv.StartRedis(t)
	for range 2 {
		var stderr bytes.Buffer
		if err := Main(context.Background(), []string{"wal", "replay", "--wal-dir", dir, "--redis", r.Addr, "--env", "test", "--log-level", "error", "--config", cfg}, io.Discard, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
	}
	// u-1 sent 20+40+60, u-0 10+30+50.
	day := time.UnixMilli(ts).UTC().Format("2006-01-02")
	got, err := r.Client().ZRevRangeWithScores(context.Background(), "rostrum:test:board:{gifts-day@"+day+"}:z", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Member != "u-1" || got[0].Score != 120 || got[1].Member != "u-0" || got[1].Score != 90 {
		t.Fatalf("board after two replays: %v", got)
	}
}

// giftWAL writes a WAL of n gift records of room r-1 on the client topic of
// environment test: record i from user u-(i mod users), worth 10·(i+1), at
// ts+i. It returns the WAL directory.
func giftWAL(t *testing.T, n, users int, ts int64) string {
	t.Helper()
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Config{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	var recs []wal.Record
	for i := range n {
		v := fmt.Sprintf(`{"room_id":"r-1","user_id":"u-%d","type":"gift","value":%d,"ts":%d}`, i%users, 10*(i+1), ts+int64(i))
		recs = append(recs, wal.Record{Topic: "test.callbacks.client", Offset: int64(i), Timestamp: time.Now(), Key: []byte("r-1"), Value: []byte(v)})
	}
	if _, err := l.Append(recs); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
