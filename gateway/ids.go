package gateway

import (
	"strconv"
	"sync"
)

// idChunk is how many request ids ids makes at a time.
const idChunk = 64

// ids hands out the request ids the gateway makes for requests that carry
// none of their own: base-counter, the counter in base 36, unique within
// the process. They are made idChunk at a time, as substrings of one
// string, each with a one-element slice of a shared array to answer it
// with (the X-Request-Id header's values, which net/http only reads), so
// that a request's id costs no allocation of its own.
type ids struct {
	base string // random per process

	mu   sync.Mutex
	seq  uint64   // the last counter value made
	vals []string // the chunk's ids not handed out yet
	buf  []byte   // scratch for the chunk's text
}

// next returns a new id and the header values holding it.
func (s *ids) next() (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.vals) == 0 {
		s.fill()
	}
	v := s.vals[:1:1]
	s.vals = s.vals[1:]
	return v[0], v
}

// fill makes the next idChunk ids.
func (s *ids) fill() {
	var ends [idChunk]int
	b := s.buf[:0]
	for i := range ends {
		s.seq++
		b = append(b, s.base...)
		b = append(b, '-')
		b = strconv.AppendUint(b, s.seq, 36)
		ends[i] = len(b)
	}
	s.buf = b
	text := string(b)
	vals := make([]string, idChunk)
	start := 0
	for i, end := range ends {
		vals[i] = text[start:end]
		start = end
	}
	s.vals = vals
}
