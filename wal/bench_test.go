package wal

import (
	"fmt"
	"testing"
	"time"
)

// benchBatch is a batch of n callback records as the processor sees them:
// three topics, room ids as keys, JSON values of about 100 bytes.
func benchBatch(n int) []Record {
	topics := [...]string{"prod.callbacks.rtc", "prod.callbacks.client", "prod.callbacks.signal"}
	recs := make([]Record, n)
	for i := range recs {
		ts := int64(1763700000000 + i)
		recs[i] = Record{
			Topic:     topics[i%3],
			Partition: int32(i % 12),
			Offset:    int64(1_000_000 + i),
			Timestamp: time.UnixMilli(ts),
			Key:       fmt.Appendf(nil, "r-%d", 1000+i%50),
			Value:     fmt.Appendf(nil, `{"room_id":"r-%d","user_id":"u-%05d","type":"volume","value":%03d,"ts":%d}`, 1000+i%50, i, i%1000, ts),
		}
	}
	return recs
}

const benchBatchLen = 1000

func BenchmarkAppend(b *testing.B) {
	for _, sync := range []SyncPolicy{SyncEveryAppend, SyncNone} {
		b.Run("sync="+sync.String(), func(b *testing.B) {
			recs := benchBatch(benchBatchLen)
			size, _ := frameSize(recs)
			l, err := Open(b.TempDir(), Config{Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Append(recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*benchBatchLen/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkReplay(b *testing.B) {
	const batches = 200 // 200k records, about 30 MB, over a few segments
	recs := benchBatch(benchBatchLen)
	size, _ := frameSize(recs)
	l, err := Open(b.TempDir(), Config{Sync: SyncNone, SegmentBytes: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for range batches {
		if _, err := l.Append(recs); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(size) * batches)
	b.ReportAllocs()
	var n int
	for b.Loop() {
		if err := l.Replay(0, func(_ uint64, recs []Record) error {
			for i := range recs {
				n += len(recs[i].Value)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*batches*benchBatchLen/b.Elapsed().Seconds(), "records/s")
	if n == 0 {
		b.Fatal("nothing replayed")
	}
}
