package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		recs []Record
	}{
		{"empty batch", nil},
		{"one record", []Record{{Topic: "prod.callbacks.rtc", Partition: 3, Offset: 42,
			Timestamp: time.UnixMilli(1763700000123), Key: []byte("r-1001"), Value: []byte(`{"type":"join"}`)}}},
		{"no key", []Record{{Topic: "t", Value: []byte("v")}}},
		{"empty value and topic", []Record{{Key: []byte("k")}}},
		{"zero timestamp", []Record{{Topic: "t", Timestamp: time.Time{}, Value: []byte("v")}}},
		{"negative numbers", []Record{{Topic: "t", Partition: -1, Offset: -2, Timestamp: time.UnixMilli(-3)}}},
		{"extreme numbers", []Record{{Topic: "t", Partition: 1<<31 - 1, Offset: 1<<63 - 1, Timestamp: time.UnixMilli(1<<62 - 1)}}},
		{"unicode topic", []Record{{Topic: "测试.callbacks.信令", Value: []byte{0, 1, 2, 0xff}}}},
		{"longest topic", []Record{{Topic: strings.Repeat("x", maxTopic), Value: []byte("v")}}},
		{"many records", testBatch(7, 500)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const seq, appended = 9, 1763700000999
			prefix := []byte("existing")
			b, err := appendFrame(bytes.Clone(prefix), seq, appended, tt.recs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(b, prefix) {
				t.Fatal("appendFrame overwrote dst")
			}
			frame := b[len(prefix):]
			size, err := frameSize(tt.recs)
			if err != nil || size != len(frame) {
				t.Fatalf("frameSize = %d, %v; frame is %d bytes", size, err, len(frame))
			}
			// A following frame must not disturb decoding.
			in := append(bytes.Clone(frame), 0xde, 0xad)
			h, recs, n, err := decodeFrame(in, nil, &interner{})
			if err != nil {
				t.Fatal(err)
			}
			if n != len(frame) || h.seq != seq || h.appended != appended || int(h.count) != len(tt.recs) {
				t.Fatalf("decoded n=%d header=%+v, want n=%d seq=%d appended=%d count=%d",
					n, h, len(frame), seq, appended, len(tt.recs))
			}
			if !sameRecords(recs, tt.recs) {
				t.Fatalf("decoded %+v, want %+v", recs, tt.recs)
			}
			for _, r := range recs {
				if len(r.Key) == 0 && r.Key != nil {
					t.Fatal("an absent key decodes as a non-nil slice")
				}
			}
		})
	}
}

// seal wraps a frame body in its length and checksum.
func seal(body []byte) []byte {
	b := make([]byte, framePrefix, framePrefix+len(body))
	binary.LittleEndian.PutUint32(b, uint32(len(body)))
	binary.LittleEndian.PutUint32(b[4:], crc32.Checksum(body, castagnoli))
	return append(b, body...)
}

// body builds a frame body by hand: seq, appended, count, then raw bytes.
func body(seq uint64, count uint32, rest ...[]byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, seq)
	b = binary.LittleEndian.AppendUint64(b, 1763700000000)
	b = binary.LittleEndian.AppendUint32(b, count)
	for _, r := range rest {
		b = append(b, r...)
	}
	return b
}

func TestDecodeFrameErrors(t *testing.T) {
	good, err := appendFrame(nil, 5, 1763700000000, testBatch(5, 3))
	if err != nil {
		t.Fatal(err)
	}
	with := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	le := binary.LittleEndian
	u16 := func(v uint16) []byte { return le.AppendUint16(nil, v) }
	u32 := func(v uint32) []byte { return le.AppendUint32(nil, v) }
	fixed := make([]byte, 20) // partition, offset, timestamp

	tests := []struct {
		name string
		in   []byte
		want string // substring of the error; "truncated" is errTruncated
	}{
		{"empty", nil, "truncated"},
		{"inside the prefix", good[:7], "truncated"},
		{"prefix only", good[:framePrefix], "truncated"},
		{"last byte missing", good[:len(good)-1], "truncated"},
		{"length zero", with(func(b []byte) { le.PutUint32(b, 0) }), "out of range"},
		{"length below the fixed body", with(func(b []byte) { le.PutUint32(b, bodyFixed-1) }), "out of range"},
		{"length above the cap", with(func(b []byte) { le.PutUint32(b, maxBody+1) }), "out of range"},
		{"length huge", with(func(b []byte) { le.PutUint32(b, 0xffffffff) }), "out of range"},
		{"bit flipped in a value", with(func(b []byte) { b[len(b)-3] ^= 0x10 }), "checksum mismatch"},
		{"bit flipped in the checksum", with(func(b []byte) { b[5] ^= 1 }), "checksum mismatch"},
		{"length shortened", with(func(b []byte) { le.PutUint32(b, le.Uint32(b)-1) }), "checksum mismatch"},
		{"seq zero", seal(body(0, 0)), "sequence 0"},
		{"count beyond the bytes", seal(body(1, 1)), "record count 1 does not fit"},
		{"count huge", seal(body(1, 0xffffffff, make([]byte, 100))), "does not fit"},
		{"topic past the end", seal(body(1, 1, u16(60000), make([]byte, recordFixed-2))), "record 0: topic"},
		{"key past the end", seal(body(1, 1, u16(0), fixed, u32(1000), u32(0))), "record 0: key"},
		{"value past the end", seal(body(1, 1, u16(0), fixed, u32(0), u32(1))), "record 0: value"},
		{"value length huge", seal(body(1, 1, u16(0), fixed, u32(0), u32(0xffffffff))), "record 0: value"},
		{"second record short", seal(body(1, 2, u16(0), fixed, u32(0), u32(0), u16(100), make([]byte, recordFixed-2))), "record 1: topic"},
		{"trailing bytes", seal(body(1, 1, u16(0), fixed, u32(0), u32(0), []byte{0})), "1 bytes after the last record"},
		{"trailing bytes, no records", seal(body(1, 0, []byte{0})), "1 bytes after the last record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, n, err := decodeFrame(tt.in, nil, nil)
			if err == nil {
				t.Fatalf("decoded %d bytes, want an error", n)
			}
			if tt.want == "truncated" {
				if !errors.Is(err, errTruncated) {
					t.Fatalf("err = %v, want errTruncated", err)
				}
				return
			}
			var fe frameError
			if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a frameError containing %q", err, tt.want)
			}
		})
	}
}

func TestAppendFrameRefuses(t *testing.T) {
	big := make([]byte, 1<<20)
	tooMany := make([]Record, maxFrame/len(big)+1)
	for i := range tooMany {
		tooMany[i].Value = big // shared: only 1 MiB allocated
	}
	tests := []struct {
		name string
		recs []Record
		want string
	}{
		{"topic too long", []Record{{Topic: strings.Repeat("x", maxTopic+1)}}, "topic is 65536 bytes"},
		{"batch too large", tooMany, "more than 268435456 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			out, err := appendFrame(dst, 1, 0, tt.recs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed to %q", out)
			}
		})
	}
}

// TestFrameAllocs checks that encoding into a reused buffer and decoding
// into reused records allocate nothing per record.
func TestFrameAllocs(t *testing.T) {
	recs := testBatch(1, 1000)
	buf, _ := appendFrame(nil, 1, 0, recs)
	if n := testing.AllocsPerRun(50, func() {
		buf, _ = appendFrame(buf[:0], 1, 0, recs)
	}); n != 0 {
		t.Errorf("appendFrame: %v allocations per batch, want 0", n)
	}
	var in interner
	out := make([]Record, 0, len(recs))
	if n := testing.AllocsPerRun(50, func() {
		_, out, _, _ = decodeFrame(buf, out, &in)
	}); n != 0 {
		t.Errorf("decodeFrame: %v allocations per batch, want 0", n)
	}
}

func TestHeader(t *testing.T) {
	good := appendHeader(nil, 0xa4)
	if len(good) != headerSize {
		t.Fatalf("header is %d bytes, want %d", len(good), headerSize)
	}
	if first, err := decodeHeader(good); err != nil || first != 0xa4 {
		t.Fatalf("decodeHeader = %d, %v", first, err)
	}
	resealed := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		binary.LittleEndian.PutUint32(b[16:], crc32.Checksum(b[:16], castagnoli))
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"short", good[:headerSize-1], "truncated frame"},
		{"zeros", make([]byte, headerSize), "bad segment magic"},
		{"bad magic", resealed(func(b []byte) { b[0] = 'X' }), "bad segment magic"},
		{"bit flip", func() []byte { b := bytes.Clone(good); b[9] ^= 4; return b }(), "checksum mismatch"},
		{"newer version", resealed(func(b []byte) { b[4] = 2 }), "format version 2 not supported"},
		{"flags", resealed(func(b []byte) { b[6] = 1 }), "flags"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := decodeHeader(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSegmentName(t *testing.T) {
	tests := []struct {
		name string
		seq  uint64
		ok   bool
	}{
		{"0000000000000001.wal", 1, true},
		{"00000000000000a4.wal", 0xa4, true},
		{"ffffffffffffffff.wal", 1<<64 - 1, true},
		{"0000000000000000.wal", 0, false},
		{"00000000000000A4.wal", 0, false},
		{"000000000000001.wal", 0, false},
		{"0000000000000001.wal.tmp", 0, false},
		{"LOCK", 0, false},
	}
	for _, tt := range tests {
		seq, ok := parseSegmentName(tt.name)
		if seq != tt.seq || ok != tt.ok {
			t.Errorf("parseSegmentName(%q) = %d, %v; want %d, %v", tt.name, seq, ok, tt.seq, tt.ok)
		}
		if tt.ok && segmentName(tt.seq) != tt.name {
			t.Errorf("segmentName(%d) = %q, want %q", tt.seq, segmentName(tt.seq), tt.name)
		}
	}
}
