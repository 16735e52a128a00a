package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"
)

// Record is one Kafka record as received.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp time.Time // record timestamp; stored with millisecond precision
	Key       []byte    // nil and empty are stored alike and read back as nil
	Value     []byte
}

const (
	// framePrefix is the length and crc fields that precede a frame's body.
	framePrefix = 8
	// bodyFixed is the seq, appended and count fields of a body.
	bodyFixed = 20
	// recordFixed is a record without its topic, key and value bytes.
	recordFixed = 2 + 4 + 8 + 8 + 4 + 4
	// minFrame is the size of the smallest frame (a batch of no records).
	minFrame = framePrefix + bodyFixed
	// maxFrame caps a whole frame, so that a corrupt length never makes a
	// reader allocate more than this.
	maxFrame = 256 << 20
	// maxBody is the largest body length a frame may declare.
	maxBody = maxFrame - framePrefix
	// maxTopic is the longest topic name a record can carry (Kafka's own limit
	// is 249 bytes).
	maxTopic = math.MaxUint16
)

// castagnoli is the CRC-32C table used by every checksum of the log.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameHeader is the fixed part of a frame's body.
type frameHeader struct {
	seq      uint64
	appended int64 // Unix milliseconds
	count    uint32
}

// errTruncated reports that the bytes end before the frame (or header) they
// start does: a partial write, or the end of what a reader may read.
var errTruncated = errors.New("truncated frame")

// frameError is a frame that cannot be decoded; its text becomes a
// CorruptionError's Reason.
type frameError string

func (e frameError) Error() string { return string(e) }

// frameSize returns the encoded size of a frame holding recs.
func frameSize(recs []Record) (int, error) {
	n := int64(minFrame)
	for i := range recs {
		r := &recs[i]
		if len(r.Topic) > maxTopic {
			return 0, fmt.Errorf("wal: record %d: topic is %d bytes, more than %d", i, len(r.Topic), maxTopic)
		}
		n += recordFixed + int64(len(r.Topic)) + int64(len(r.Key)) + int64(len(r.Value))
		if n > maxFrame {
			return 0, fmt.Errorf("wal: batch of %d records is more than %d bytes", len(recs), maxFrame)
		}
	}
	return int(n), nil
}

// appendFrame appends the frame of one batch to dst and returns the extended
// buffer. It allocates only when dst lacks the capacity.
func appendFrame(dst []byte, seq uint64, appended int64, recs []Record) ([]byte, error) {
	n, err := frameSize(recs)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	b := dst[start:]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(n-framePrefix))
	le.PutUint64(b[8:], seq)
	le.PutUint64(b[16:], uint64(appended))
	le.PutUint32(b[24:], uint32(len(recs)))
	p := minFrame
	for i := range recs {
		r := &recs[i]
		le.PutUint16(b[p:], uint16(len(r.Topic)))
		p += 2
		p += copy(b[p:], r.Topic)
		le.PutUint32(b[p:], uint32(r.Partition))
		le.PutUint64(b[p+4:], uint64(r.Offset))
		le.PutUint64(b[p+12:], uint64(r.Timestamp.UnixMilli()))
		le.PutUint32(b[p+20:], uint32(len(r.Key)))
		p += 24
		p += copy(b[p:], r.Key)
		le.PutUint32(b[p:], uint32(len(r.Value)))
		p += 4
		p += copy(b[p:], r.Value)
	}
	le.PutUint32(b[4:], crc32.Checksum(b[framePrefix:], castagnoli))
	return dst, nil
}

// frameLength validates the length field at the start of b (at least
// framePrefix bytes) and returns the size of the whole frame.
func frameLength(b []byte) (int, error) {
	n := binary.LittleEndian.Uint32(b)
	if n < bodyFixed || n > maxBody {
		return 0, frameError(fmt.Sprintf("frame length %d out of range", n))
	}
	return framePrefix + int(n), nil
}

// decodeFrame decodes the frame at the start of b. The records are appended
// to recs[:0]; their Key and Value alias b. Topics go through in when it is
// not nil. n is the size of the frame. err is errTruncated when b ends inside
// the frame, a frameError when the frame is bad.
func decodeFrame(b []byte, recs []Record, in *interner) (h frameHeader, out []Record, n int, err error) {
	if len(b) < framePrefix {
		return h, recs, 0, errTruncated
	}
	n, err = frameLength(b)
	if err != nil {
		return h, recs, 0, err
	}
	if len(b) < n {
		return h, recs, 0, errTruncated
	}
	body := b[framePrefix:n]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return h, recs, 0, frameError("checksum mismatch")
	}
	h, out, err = decodeBody(body, recs, in)
	if err != nil {
		return h, out, 0, err
	}
	return h, out, n, nil
}

// decodeBody decodes a frame body whose checksum has been verified. It never
// trusts a length: every one is checked against the bytes left, and count is
// checked against the room the records need, which bounds the allocation of
// recs by len(body).
func decodeBody(body []byte, recs []Record, in *interner) (frameHeader, []Record, error) {
	le := binary.LittleEndian
	var h frameHeader
	if len(body) < bodyFixed {
		return h, recs, frameError("frame body too short")
	}
	h.seq = le.Uint64(body[0:])
	h.appended = int64(le.Uint64(body[8:]))
	h.count = le.Uint32(body[16:])
	if h.seq == 0 {
		return h, recs, frameError("sequence 0")
	}
	if uint64(h.count) > uint64(len(body)-bodyFixed)/recordFixed {
		return h, recs, frameError(fmt.Sprintf("record count %d does not fit in %d bytes", h.count, len(body)))
	}
	recs = slices.Grow(recs[:0], int(h.count))
	p := bodyFixed
	for i := uint32(0); i < h.count; i++ {
		if len(body)-p < 2 {
			return h, recs, recordError(i, "topic length")
		}
		tl := int(le.Uint16(body[p:]))
		p += 2
		if len(body)-p < tl+24 {
			return h, recs, recordError(i, "topic")
		}
		var r Record
		if in != nil {
			r.Topic = in.intern(body[p : p+tl])
		} else {
			r.Topic = string(body[p : p+tl])
		}
		p += tl
		r.Partition = int32(le.Uint32(body[p:]))
		r.Offset = int64(le.Uint64(body[p+4:]))
		r.Timestamp = time.UnixMilli(int64(le.Uint64(body[p+12:])))
		kl := uint64(le.Uint32(body[p+20:]))
		p += 24
		if uint64(len(body)-p) < kl+4 {
			return h, recs, recordError(i, "key")
		}
		if kl > 0 {
			r.Key = body[p : p+int(kl) : p+int(kl)]
		}
		p += int(kl)
		vl := uint64(le.Uint32(body[p:]))
		p += 4
		if uint64(len(body)-p) < vl {
			return h, recs, recordError(i, "value")
		}
		r.Value = body[p : p+int(vl) : p+int(vl)]
		p += int(vl)
		recs = append(recs, r)
	}
	if p != len(body) {
		return h, recs, frameError(fmt.Sprintf("%d bytes after the last record", len(body)-p))
	}
	return h, recs, nil
}

func recordError(i uint32, field string) error {
	return frameError(fmt.Sprintf("record %d: %s runs past the frame", i, field))
}

// interner shares one string per topic name among the records a reader
// decodes, so that replay does not allocate a string per record.
type interner struct {
	last string
	m    map[string]string
}

// maxInterned bounds the interner against a log with unbounded topic names.
const maxInterned = 4096

func (in *interner) intern(b []byte) string {
	if string(b) == in.last { // no allocation: the compiler compares in place
		return in.last
	}
	s, ok := in.m[string(b)]
	if !ok {
		if in.m == nil || len(in.m) >= maxInterned {
			in.m = make(map[string]string)
		}
		s = string(b)
		in.m[s] = s
	}
	in.last = s
	return s
}
