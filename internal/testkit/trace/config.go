package trace

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/rostrumhq/rostrum/codec"
)

// DefaultBaseTS is the default trace start: 2025-11-21T04:40:00Z, in Unix ms.
const DefaultBaseTS = int64(1763700000000)

// maxStep is the most the event clock advances per record, in ms.
const maxStep = 4

// Config says what trace to generate. Zero counts and BaseTS take their
// defaults; zero rates mean none of that kind.
type Config struct {
	// Seed selects the trace; the same Config gives the same records.
	Seed uint64
	// Rooms is the number of rooms. Default: 40.
	Rooms int
	// MaxMembers is the size of the largest rooms. About one room in eight
	// (room 0 always) has MaxMembers members; the others have 1 to
	// min(24, MaxMembers). Most of a room's members join early on, some
	// never do. Default: 200.
	MaxMembers int
	// Records is the number of records generated. Default: 10000.
	Records int
	// BaseTS is the event time of the first record, Unix ms. It must be at
	// or after codec.DefaultEpoch. The clock advances at most 4 ms per
	// record, so for the decoder to accept every good record, BaseTS plus
	// 4 ms × Records must be in the past, or within the decoder's future
	// skew. Default: DefaultBaseTS.
	BaseTS int64
	// ArrayRate is the share of fresh records that are JSON arrays; most are
	// volume indications of several speakers. 0..1.
	ArrayRate float64
	// DupRate is the share of records that re-send an earlier good record
	// verbatim. 0..1.
	DupRate float64
	// BadRate is the share of records the decoder must reject. 0..1.
	BadRate float64
	// ReorderRate is the share of records whose events are up to 5 s older
	// than the newest event before them. 0..1; DupRate + BadRate +
	// ReorderRate <= 1.
	ReorderRate float64
	// UnknownRate is the share of records that carry a well-formed callback
	// of a type rostrum does not rank on (a raised hand, a chat message, a
	// network report): skipped and counted, or sent to the DLQ with
	// --unknown-types dlq. 0..1; with the three rates above at most 1.
	UnknownRate float64
	// RoomPrefix begins every room id: RoomPrefix + "r-" + n, so "prod-"
	// gives "prod-r-12". It must consist of id characters [A-Za-z0-9._:@-].
	// Default: none.
	RoomPrefix string
}

// DefaultConfig returns a realistic trace configuration for seed: 40 rooms
// of up to 200 members, 10000 records, 35% arrays, 3% duplicates, 2% bad
// records, 5% reordered records and 2% records of types rostrum does not
// rank on.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:        seed,
		Rooms:       40,
		MaxMembers:  200,
		Records:     10000,
		BaseTS:      DefaultBaseTS,
		ArrayRate:   0.35,
		DupRate:     0.03,
		BadRate:     0.02,
		ReorderRate: 0.05,
		UnknownRate: 0.02,
	}
}

// WithDefaults returns c with zero Rooms, MaxMembers, Records and BaseTS set
// to their defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig(c.Seed)
	if c.Rooms == 0 {
		c.Rooms = d.Rooms
	}
	if c.MaxMembers == 0 {
		c.MaxMembers = d.MaxMembers
	}
	if c.Records == 0 {
		c.Records = d.Records
	}
	if c.BaseTS == 0 {
		c.BaseTS = d.BaseTS
	}
	return c
}

// Validate reports the first field of c (defaults filled in) that is out of
// range.
func (c Config) Validate() error {
	c = c.WithDefaults()
	epoch := codec.DefaultEpoch.UnixMilli()
	end := epoch + codec.MeetingWindow.Milliseconds()
	rate := func(name string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("trace: %s must be between 0 and 1, got %v", name, v)
		}
		return nil
	}
	switch {
	case c.Rooms < 0:
		return fmt.Errorf("trace: Rooms must be >= 0 (0: default), got %d", c.Rooms)
	case c.MaxMembers < 0:
		return fmt.Errorf("trace: MaxMembers must be >= 0 (0: default), got %d", c.MaxMembers)
	case c.Records < 0:
		return fmt.Errorf("trace: Records must be >= 0 (0: default), got %d", c.Records)
	case c.BaseTS < epoch:
		return fmt.Errorf("trace: BaseTS must be at or after codec.DefaultEpoch (%d ms), got %d", epoch, c.BaseTS)
	case c.BaseTS+int64(c.Records)*maxStep >= end:
		return fmt.Errorf("trace: BaseTS %d ms leaves the meeting score window, which ends at %d ms", c.BaseTS, end)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{{"ArrayRate", c.ArrayRate}, {"DupRate", c.DupRate}, {"BadRate", c.BadRate}, {"ReorderRate", c.ReorderRate}, {"UnknownRate", c.UnknownRate}} {
		if err := rate(r.name, r.v); err != nil {
			return err
		}
	}
	if sum := c.DupRate + c.BadRate + c.ReorderRate + c.UnknownRate; sum > 1 {
		return fmt.Errorf("trace: DupRate + BadRate + ReorderRate + UnknownRate must be at most 1, got %v", sum)
	}
	if !validID(c.RoomPrefix + "r-" + strconv.Itoa(c.Rooms)) {
		return errors.New("trace: RoomPrefix must be id characters [A-Za-z0-9._:@-], at most 120 bytes")
	}
	return nil
}

// validID reports whether s is a valid room or user id (docs/DESIGN.md §2).
func validID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}
