package wal_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/rostrumhq/rostrum/wal"
)

func Example() {
	dir, err := os.MkdirTemp("", "rostrum-wal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := wal.Open(dir, wal.Config{}) // fsync on every Append
	if err != nil {
		log.Fatal(err)
	}
	batches := [][]wal.Record{
		{
			{Topic: "prod.callbacks.rtc", Partition: 0, Offset: 41, Timestamp: time.UnixMilli(1763700000123),
				Key: []byte("r-1001"), Value: []byte(`{"room_id":"r-1001","user_id":"u-42","type":"volume","value":512,"ts":1763700000123}`)},
			{Topic: "prod.callbacks.signal", Partition: 3, Offset: 7, Timestamp: time.UnixMilli(1763700000130),
				Key: []byte("r-1001"), Value: []byte(`{"room_id":"r-1001","user_id":"u-7","type":"join","ts":1763700000130}`)},
		},
		{
			{Topic: "prod.callbacks.rtc", Partition: 0, Offset: 42, Timestamp: time.UnixMilli(1763700000456),
				Key: []byte("r-1001"), Value: []byte(`{"room_id":"r-1001","user_id":"u-42","type":"audio","value":1,"ts":1763700000456}`)},
		},
	}
	for _, b := range batches {
		seq, err := l.Append(b) // durable when it returns
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("appended batch", seq)
	}

	// After a crash, the processor replays what it had not applied yet.
	err = l.Replay(1, func(seq uint64, recs []wal.Record) error {
		for _, r := range recs {
			fmt.Printf("batch %d: %s/%d@%d %s\n", seq, r.Topic, r.Partition, r.Offset, r.Key)
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("last seq", l.LastSeq())
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// appended batch 1
	// appended batch 2
	// batch 1: prod.callbacks.rtc/0@41 r-1001
	// batch 1: prod.callbacks.signal/3@7 r-1001
	// batch 2: prod.callbacks.rtc/0@42 r-1001
	// last seq 2
}

func ExampleInspect() {
	dir, err := os.MkdirTemp("", "rostrum-wal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	l, err := wal.Open(dir, wal.Config{Sync: wal.SyncNone})
	if err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		rec := wal.Record{Topic: "prod.callbacks.client", Offset: int64(i), Value: []byte(`{}`)}
		if _, err := l.Append([]wal.Record{rec, rec}); err != nil {
			log.Fatal(err)
		}
	}

	// Inspect reads without the lock, so it works while the log is open.
	records := 0
	segs, err := wal.Inspect(dir, func(seq uint64, appended time.Time, recs []wal.Record) error {
		records += len(recs)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range segs {
		fmt.Printf("segment %d..%d: %d batches, %d records in all\n", s.FirstSeq, s.LastSeq, s.Batches, records)
	}
	l.Close()
	// Output:
	// segment 1..3: 3 batches, 6 records in all
}
