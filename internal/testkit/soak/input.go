package soak

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/internal/testkit/trace"
)

// Outcome of one trace record's requests.
const (
	pending  = iota // not answered with a 2xx or a 4xx yet
	accepted        // a 2xx answer: every record of it must be in the topic
	refused         // a 4xx answer: nothing of it is required
)

// Source hands out the soak's input records without end: chunks of a
// generated meeting trace interleaved with board records, made as they are
// needed, and remembers each record's outcome. Safe for concurrent use.
type Source struct {
	env       string
	chunk     int       // meeting records per chunk
	now       time.Time // board events are generated relative to it
	mu        sync.Mutex
	recs      []trace.Record
	outcome   []uint8
	attempts  []uint8 // requests sent, capped at 255
	chunks    int
	skipped   int // records left out (see generate)
	nextMeets int64
}

// NewSource returns a source of records for env, chunk meeting records at a
// time (with a fifth as many board records).
func NewSource(env string, chunk int) *Source {
	return &Source{env: env, chunk: chunk, now: time.Now(), nextMeets: trace.DefaultBaseTS}
}

// Get returns record i, generating chunks up to it.
func (s *Source) Get(i int) trace.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i >= len(s.recs) {
		s.generate()
	}
	if s.attempts[i] < 255 {
		s.attempts[i]++
	}
	return s.recs[i]
}

// Done records the final outcome of record i (accepted or refused).
func (s *Source) Done(i int, outcome uint8) {
	s.mu.Lock()
	s.outcome[i] = outcome
	s.mu.Unlock()
}

// generate appends one chunk. Each chunk is the same meeting trace (one
// seed: the same 60 rooms with the same members) on an event clock that
// continues the one before, so that the rooms live on, their members'
// state keeps changing and the working set stays the same size, as in a
// service whose meetings come and go at a steady rate. The board records
// have a seed per chunk and no event ids: a board keeps the ids it has
// seen for as long as their period, so ids would make Redis grow for the
// length of a week however steady the load (deduplication by id is the
// chaos suite's to test). A record the oracle cannot split the way the
// gateway does (a bad array naming several rooms: which part is bad is not
// known; see Parts) is left out and counted in skipped.
func (s *Source) generate() {
	seed := uint64(1000 + s.chunks)
	s.chunks++
	cfg := trace.DefaultConfig(1000)
	cfg.Records = s.chunk
	cfg.Rooms = 60
	cfg.MaxMembers = 200
	cfg.BaseTS = s.nextMeets
	// Board events at most 2 hours old (internal/testkit/chaos/boards.yaml says
	// why), 2 % of them 8 days old: late on every board.
	bcfg := trace.BoardConfig{Seed: seed, Records: s.chunk / 5, Now: s.now.UnixMilli(), Rooms: 60, Users: 80, Items: 12,
		ArrayRate: 0.3, LateRate: 0.02, DecimalRate: 0.3,
		Cheaters: 4, CheatRate: 0.02}
	meets := trace.Generate(cfg)
	for _, r := range meets {
		for _, e := range r.Events {
			s.nextMeets = max(s.nextMeets, e.TS+1)
		}
	}
	for _, r := range trace.Interleave(seed, meets, trace.GenerateBoards(bcfg)) {
		if _, err := Parts(r); err != nil {
			s.skipped++
			continue
		}
		s.recs = append(s.recs, r)
		s.outcome = append(s.outcome, pending)
		s.attempts = append(s.attempts, 0)
	}
}

// objectRoom is what the oracle reads of a callback object.
type objectRoom struct {
	RoomID *string `json:"room_id"`
}

// Parts returns the records the gateway makes of r (gateway/doc.go,
// "Pass-through"), written here independently of gateway.Split: an object
// is one record as it is; an array is one record per room with that room's
// objects in their order, joined by "," inside "[" "]", keyed by the room.
// A good array's events (one per object) go with their objects. Parts
// returns nil for a value the gateway refuses (not JSON, an object without
// a room id), and an error for a bad array of several rooms, whose parts
// cannot be told good or bad without decoding them.
func Parts(r trace.Record) ([]trace.Record, error) {
	v := bytes.TrimSpace(r.Value)
	if len(v) == 0 || v[0] != '[' {
		var o objectRoom
		if json.Unmarshal(v, &o) != nil || o.RoomID == nil {
			return nil, nil
		}
		p := r
		p.Key = *o.RoomID
		return []trace.Record{p}, nil
	}
	var objs []json.RawMessage
	if json.Unmarshal(v, &objs) != nil || len(objs) == 0 {
		return nil, nil
	}
	var rooms []string
	idx := map[string][]int{}
	for i, raw := range objs {
		var o objectRoom
		if json.Unmarshal(raw, &o) != nil || o.RoomID == nil {
			return nil, nil
		}
		if _, ok := idx[*o.RoomID]; !ok {
			rooms = append(rooms, *o.RoomID)
		}
		idx[*o.RoomID] = append(idx[*o.RoomID], i)
	}
	if len(rooms) > 1 && (!r.Good() || len(r.Events) != len(objs)) {
		return nil, fmt.Errorf("soak: an array of %d rooms whose events cannot be told apart (bad %q, %d events for %d objects)",
			len(rooms), r.Bad, len(r.Events), len(objs))
	}
	parts := make([]trace.Record, 0, len(rooms))
	for _, room := range rooms {
		p := trace.Record{Topic: r.Topic, Key: room, Bad: r.Bad, Dup: r.Dup, Reordered: r.Reordered, Unknown: r.Unknown}
		b := []byte{'['}
		for j, i := range idx[room] {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(b, objs[i]...)
			if len(rooms) > 1 {
				p.Events = append(p.Events, r.Events[i])
			}
		}
		p.Value = append(b, ']')
		if len(rooms) == 1 {
			p.Events = r.Events
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// Reconciled is the input as the topics hold it, matched with what the
// gateway answered.
type Reconciled struct {
	Trace       []trace.Record // one per input record in the topics, in topic order
	Accepted    int            // trace records answered 2xx
	Refused     int            // answered 4xx
	Unanswered  int            // never answered 2xx or 4xx (the run ended while they were retried)
	Retried     int            // trace records sent more than once
	LostN       int            // records of 2xx answers missing from the topics
	Lost        []string       // the first 20 of them
	UnexpectedN int            // topic records no request sent
	Unexpected  []string       // the first 20 of them
	Skipped     int            // generated records left out (Source.generate)
}

type partKey struct{ topic, value string }

// Reconcile matches the input topics' records (inputs, with topic names
// env.callbacks.{rtc,client,signal}) with the records sent: every record of
// every 2xx answer must be there as often as it was accepted; records of
// requests answered otherwise may be there (a failed request may have
// landed in part, and a retry lands again). The model is then made of what
// the topics hold, each record carrying the events its objects hold.
func (s *Source) Reconcile(inputs []*kgo.Record) (*Reconciled, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := &Reconciled{Skipped: s.skipped}
	want := map[partKey]int{}
	known := map[partKey]trace.Record{}
	for i, r := range s.recs {
		if s.attempts[i] == 0 {
			continue // never sent: the run ended before its turn
		}
		if s.attempts[i] > 1 {
			rec.Retried++
		}
		parts, err := Parts(r)
		if err != nil {
			return nil, err
		}
		switch s.outcome[i] {
		case accepted:
			rec.Accepted++
		case refused:
			rec.Refused++
		default:
			rec.Unanswered++
		}
		for _, p := range parts {
			k := partKey{s.env + ".callbacks." + p.Topic, string(p.Value)}
			known[k] = p
			if s.outcome[i] == accepted {
				want[k]++
			}
		}
	}
	for _, kr := range inputs {
		k := partKey{kr.Topic, string(kr.Value)}
		p, ok := known[k]
		if !ok {
			rec.UnexpectedN++
			if len(rec.Unexpected) < 20 {
				rec.Unexpected = append(rec.Unexpected, fmt.Sprintf("%s/%d@%d %.120s", kr.Topic, kr.Partition, kr.Offset, kr.Value))
			}
			continue
		}
		if string(kr.Key) != p.Key {
			rec.UnexpectedN++
			rec.Unexpected = append(rec.Unexpected, fmt.Sprintf("%s/%d@%d keyed %q, want the room %q", kr.Topic, kr.Partition, kr.Offset, kr.Key, p.Key))
		}
		if want[k] > 0 {
			want[k]--
		}
		rec.Trace = append(rec.Trace, p)
	}
	for k, n := range want {
		rec.LostN += n
		if n > 0 && len(rec.Lost) < 20 {
			rec.Lost = append(rec.Lost, fmt.Sprintf("%s: %d× %.120s", k.topic, n, k.value))
		}
	}
	return rec, nil
}
