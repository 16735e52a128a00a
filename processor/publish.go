package processor

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/sink"
)

// Output is the record published to {env}.ranking.topn (DESIGN §2).
type Output struct {
	RoomID string         `json:"room_id"`
	Seq    int64          `json:"seq"`
	TS     int64          `json:"ts"`
	Top    []OutputMember `json:"top"`
}

// OutputMember is one slot of a published stable list.
type OutputMember struct {
	UserID string  `json:"user_id"`
	Audio  uint8   `json:"audio"`
	Volume uint16  `json:"volume"`
	Video  uint8   `json:"video"`
	Role   string  `json:"role"`
	Score  float64 `json:"score"`
}

// encodeOutput renders the output record of room st with the new stable list
// (seq = st.Seq+1). Every member of list is in st.Top or, kept by the
// hysteresis, in st.Stable with a score in st.StableScores; the scores
// carry all the fields. ts is the newest event time of the batch for the
// room (or the deadline the timer stepped it at); a room re-merged without
// events of its own keeps the time of its top member.
func (p *Processor) encodeOutput(st *sink.RoomState, list []string, ts int64) ([]byte, error) {
	b := make([]byte, 0, 64+96*len(list))
	b = append(b, `{"room_id":`...)
	b = strconv.AppendQuote(b, st.Room)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, st.Seq+1, 10)
	var members []byte
	var newest int64
	for i, id := range list {
		score := scoreOf(st, id)
		f, err := p.cfg.Meeting.Decode(score)
		if err != nil {
			return nil, err
		}
		newest = max(newest, f.TS)
		if i > 0 {
			members = append(members, ',')
		}
		members = append(members, `{"user_id":`...)
		members = strconv.AppendQuote(members, id)
		members = append(members, `,"audio":`...)
		members = strconv.AppendUint(members, uint64(f.Audio), 10)
		members = append(members, `,"volume":`...)
		members = strconv.AppendUint(members, uint64(f.Volume), 10)
		members = append(members, `,"video":`...)
		members = strconv.AppendUint(members, uint64(f.Video), 10)
		members = append(members, `,"role":"`...)
		members = append(members, f.Role.String()...)
		members = append(members, `","score":`...)
		members = strconv.AppendFloat(members, score, 'f', -1, 64)
		members = append(members, '}')
	}
	if ts == 0 {
		ts = newest
	}
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"top":[`...)
	b = append(b, members...)
	b = append(b, "]}"...)
	return b, nil
}

// outputRecord wraps an encoded output for the topn topic, keyed by room so
// that one room's outputs stay in order on one partition.
func (p *Processor) outputRecord(room string, value []byte) *kgo.Record {
	return &kgo.Record{Topic: p.topics.TopN, Key: []byte(room), Value: value}
}

// dlqRecord copies a rejected record to the DLQ with its reason and origin.
func (p *Processor) dlqRecord(r *kgo.Record, reason string) *kgo.Record {
	return &kgo.Record{
		Topic: p.topics.DLQ,
		Key:   r.Key,
		Value: r.Value,
		Headers: []kgo.RecordHeader{
			{Key: "rostrum-error", Value: []byte(reason)},
			{Key: "rostrum-topic", Value: []byte(r.Topic)},
			{Key: "rostrum-partition", Value: strconv.AppendInt(nil, int64(r.Partition), 10)},
			{Key: "rostrum-offset", Value: strconv.AppendInt(nil, r.Offset, 10)},
		},
	}
}

// scoreOf returns the current score of id, a member of room st's raw top-N
// or of its stored stable list (0 when it is in neither).
func scoreOf(st *sink.RoomState, id string) float64 {
	for _, m := range st.Top {
		if m.UserID == id {
			return m.Score
		}
	}
	for i, m := range st.Stable {
		if m == id && i < len(st.StableScores) && st.StableScores[i] != sink.Unranked {
			return st.StableScores[i]
		}
	}
	return 0
}
