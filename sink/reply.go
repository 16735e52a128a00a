package sink

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rostrumhq/rostrum/ranking"
)

// parseHead reads the six values that fastLua's reply of a room written
// without a merge begins with: applied, seq, stable list, pending output, version,
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
