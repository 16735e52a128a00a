package codec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// benchEvent is a typical callback event, as producers send it.
func benchEvent(i int) string {
	return `{"room_id":"r-1001","user_id":"u-` + strconv.Itoa(40+i) + `","type":"volume","value":` +
		strconv.Itoa(500+i) + `,"ts":1763700000` + strconv.Itoa(100+i) + `}`
}

// benchArray is a JSON-array record of n typical events.
func benchArray(n int) string {
	events := make([]string, n)
	for i := range events {
		events[i] = benchEvent(i)
	}
	return "[" + strings.Join(events, ",") + "]"
}

func benchmarkDecode(b *testing.B, value []byte, events int) {
	d := NewDecoder(DecodeConfig{})
	dst := make([]Event, 0, events)
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = d.Decode(dst[:0], value, SourceRTC, testNow); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

func BenchmarkDecode(b *testing.B) {
	b.Run("object", func(b *testing.B) { benchmarkDecode(b, []byte(benchEvent(0)), 1) })
	b.Run("array20", func(b *testing.B) { benchmarkDecode(b, []byte(benchArray(20)), 20) })
}

// BenchmarkDecodeEncodingJSON is the baseline Decode replaces: encoding/json
// into a struct, with no validation at all.
func BenchmarkDecodeEncodingJSON(b *testing.B) {
	type wireEvent struct {
		RoomID string          `json:"room_id"`
		UserID string          `json:"user_id"`
		Type   string          `json:"type"`
		Value  json.RawMessage `json:"value"`
		TS     int64           `json:"ts"`
		Source string          `json:"source"`
	}
	value := []byte(benchArray(20))
	b.SetBytes(int64(len(value)))
	b.ReportAllocs()
	for b.Loop() {
		var events []wireEvent
		if err := json.Unmarshal(value, &events); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*20), "ns/event")
}
