package sink

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/ranking"
)

// parseRoomState reads applyLua's reply into st, and returns the state token
// and the (user, packed state) pairs of a want-states reply.
func parseRoomState(c *redis.Cmd, room string, st *ranking.RoomState) (token string, pairs []any, err error) {
	vals, err := c.Slice()
	if err != nil {
		return "", nil, fmt.Errorf("sink: apply room %q: %w", room, err)
	}
	const head = 10 // values before the member states and the raw top list
	if len(vals) < head {
		return "", nil, fmt.Errorf("sink: apply room %q: unexpected reply of %d values", room, len(vals))
	}
	nstates, _ := vals[9].(int64)
	if nstates < 0 || int64(len(vals)) < head+2*nstates || len(vals)%2 != 0 {
		return "", nil, fmt.Errorf("sink: apply room %q: unexpected reply of %d values", room, len(vals))
	}
	parseHead(vals, room, st)
	st.StableScores = st.StableScores[:0]
	if scores, _ := vals[6].(string); len(st.Stable) > 0 {
		for s := range strings.SplitSeq(scores, ",") {
			score := ranking.Unranked
			if s != "" {
				f, err := strconv.ParseFloat(s, 64)
				if err != nil {
					return "", nil, fmt.Errorf("sink: apply room %q: score %q of a stable member: %w", room, s, err)
				}
				score = f
			}
			st.StableScores = append(st.StableScores, score)
		}
		if len(st.StableScores) != len(st.Stable) {
			return "", nil, fmt.Errorf("sink: apply room %q: %d scores for %d stable members", room, len(st.StableScores), len(st.Stable))
		}
	}
	if ref, _ := vals[7].(string); ref != "" {
		st.Refused = strings.Split(ref, ",")
	}
	token, _ = vals[8].(string)
	end := head + 2*int(nstates)
	if err := parseTop(vals[end:], room, st); err != nil {
		return "", nil, err
	}
	return token, vals[head:end], nil
}

// parseHead reads the six values that applyLua's and fastLua's replies
// begin with: applied, seq, stable list, pending output, version,
// hysteresis state.
func parseHead(vals []any, room string, st *ranking.RoomState) {
	st.Room = room
	st.Applied = vals[0].(int64) == 1
	st.Seq = vals[1].(int64)
	if list, _ := vals[2].(string); list != "" {
		st.Stable = strings.Split(list, ",")
	}
	if out, _ := vals[3].(string); out != "" {
		st.Pending = []byte(out)
	}
	st.Version = vals[4].(int64)
	st.HState, _ = vals[5].(string)
}

// parseTop reads a raw top list of (user, score) pairs, best first.
func parseTop(vals []any, room string, st *ranking.RoomState) error {
	st.Top = make([]ranking.Ranked, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		user, _ := vals[i].(string)
		s, _ := vals[i+1].(string)
		score, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("sink: apply room %q: score %q of %q: %w", room, s, user, err)
		}
		st.Top = append(st.Top, ranking.Ranked{UserID: user, Score: score})
	}
	return nil
}
