package codec

import (
	"math"
	"strconv"
)

// Output is the record rostrum publishes to {env}.ranking.topn, keyed by
// room id, whenever a room's stable top-N changes (docs/DESIGN.md §2):
//
//	{"room_id":"r-1001","seq":17,"ts":1763700000456,
//	 "top":[{"user_id":"u-42","audio":1,"volume":512,"video":1,"role":"host",
//	         "screen_share":0,"spotlight":1,"score":123456789}]}
//
// Seq grows by one per published change of the room, across restarts and
// rebalances; TS is the event time of the newest event behind the change.
type Output struct {
	RoomID string         `json:"room_id"`
	Seq    int64          `json:"seq"`
	TS     int64          `json:"ts"`
	Top    []OutputMember `json:"top"`
}

// OutputMember is one slot of a published stable list: the member's
// fields as its score encodes them, and the score itself. A field the
// ranking rules leave out is not in the score and not in the record (it
// decodes as its zero value).
type OutputMember struct {
	UserID      string  `json:"user_id"`
	Audio       uint8   `json:"audio"`
	Volume      uint16  `json:"volume"`
	Video       uint8   `json:"video"`
	Role        string  `json:"role"`
	ScreenShare uint8   `json:"screen_share"`
	Spotlight   uint8   `json:"spotlight"`
	Score       float64 `json:"score"`
}

// AppendOutput appends the JSON of room's output record to dst: the stable
// list ids, slot by slot, where scores[i] is the meeting score of ids[i]
// under m; its fields are decoded from the score, and the fields m's rules
// leave out are left out. ts 0 means the newest event time among the
// members. Under rules that hold every field (the default), the bytes are
// what encoding/json makes of an Output with the same values, without its
// allocations.
func (m *Meeting) AppendOutput(dst []byte, room string, seq, ts int64, ids []string, scores []float64) ([]byte, error) {
	if ts == 0 {
		for _, s := range scores {
			f, err := m.Decode(s)
			if err != nil {
				return nil, err
			}
			ts = max(ts, f.TS)
		}
	}
	dst = append(dst, `{"room_id":`...)
	dst = strconv.AppendQuote(dst, room)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, ts, 10)
	dst = append(dst, `,"top":[`...)
	for i, id := range ids {
		f, err := m.Decode(scores[i])
		if err != nil {
			return nil, err
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"user_id":`...)
		dst = strconv.AppendQuote(dst, id)
		if m.Has(RuleAudio) {
			dst = append(dst, `,"audio":`...)
			dst = strconv.AppendUint(dst, uint64(f.Audio), 10)
		}
		if m.Has(RuleVolume) {
			dst = append(dst, `,"volume":`...)
			dst = strconv.AppendUint(dst, uint64(f.Volume), 10)
		}
		if m.Has(RuleVideo) {
			dst = append(dst, `,"video":`...)
			dst = strconv.AppendUint(dst, uint64(f.Video), 10)
		}
		if m.Has(RuleRole) {
			dst = append(dst, `,"role":"`...)
			dst = append(dst, f.Role.String()...)
			dst = append(dst, '"')
		}
		if m.Has(RuleScreenShare) {
			dst = append(dst, `,"screen_share":`...)
			dst = strconv.AppendUint(dst, uint64(f.ScreenShare), 10)
		}
		if m.Has(RuleSpotlight) {
			dst = append(dst, `,"spotlight":`...)
			dst = strconv.AppendUint(dst, uint64(f.Spotlight), 10)
		}
		dst = append(dst, `,"score":`...)
		dst = appendScore(dst, scores[i])
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}

// appendScore appends s as strconv.AppendFloat(dst, s, 'f', -1, 64) does
// (and encoding/json, below 1e21). A score that Decode accepts is a whole
// number below 2^53, which AppendInt writes the same, several times faster:
// the float's shortest form was about half of an output's encoding.
func appendScore(dst []byte, s float64) []byte {
	if s >= 1 && s < 1<<53 && s == math.Trunc(s) {
		return strconv.AppendInt(dst, int64(s), 10)
	}
	return strconv.AppendFloat(dst, s, 'f', -1, 64)
}
