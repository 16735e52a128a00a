package codec

import "strconv"

// Output is the record rostrum publishes to {env}.ranking.topn, keyed by
// room id, whenever a room's stable top-N changes (docs/DESIGN.md §2):
//
//	{"room_id":"r-1001","seq":17,"ts":1763700000456,
//	 "top":[{"user_id":"u-42","audio":1,"volume":512,"video":1,"role":"host","score":123456789}]}
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
// fields as its score encodes them, and the score itself.
type OutputMember struct {
	UserID string  `json:"user_id"`
	Audio  uint8   `json:"audio"`
	Volume uint16  `json:"volume"`
	Video  uint8   `json:"video"`
	Role   string  `json:"role"`
	Score  float64 `json:"score"`
}

// AppendOutput appends the JSON of room's output record to dst: the stable
// list ids, slot by slot, where scores[i] is the meeting score of ids[i]
// under m; its fields are decoded from the score. ts 0 means the newest
// event time among the members. The bytes are what encoding/json makes of
// an Output with the same values, without its allocations.
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
		dst = append(dst, `,"audio":`...)
		dst = strconv.AppendUint(dst, uint64(f.Audio), 10)
		dst = append(dst, `,"volume":`...)
		dst = strconv.AppendUint(dst, uint64(f.Volume), 10)
		dst = append(dst, `,"video":`...)
		dst = strconv.AppendUint(dst, uint64(f.Video), 10)
		dst = append(dst, `,"role":"`...)
		dst = append(dst, f.Role.String()...)
		dst = append(dst, `","score":`...)
		dst = strconv.AppendFloat(dst, scores[i], 'f', -1, 64)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}
