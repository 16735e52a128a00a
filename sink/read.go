package sink

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/glob"
	"github.com/rostrumhq/rostrum/ranking"
)

// RoomView reads a room's stable and raw top lists in one pipelined round
// trip, without changing anything. The fields of raw members come from their
// scores. A member of the stable list is normally in the raw top-N too; the
// stored list lags the ranking only between an apply and the store of the
// merged list, and then such a member's fields come from its stored state in
// a second round trip (Score is 0 when it no longer ranks).
//
// It returns ErrUnknownRoom when the room has no keys. It is safe for
// concurrent use.
func (r *Store) RoomView(ctx context.Context, room string) (ranking.RoomView, error) {
	views, errs := r.RoomViews(ctx, []string{room})
	return views[0], errs[0]
}

// RoomViews reads many rooms as RoomView reads one, all in one pipelined
// round trip (plus one per room whose stored list lags its ranking): the
// live page's event streams read every room they show this way, once per
// interval. views[i] and errs[i] are rooms[i]'s; errs[i] is
// ErrUnknownRoom for a room with no keys. It is safe for concurrent use.
func (r *Store) RoomViews(ctx context.Context, rooms []string) (views []ranking.RoomView, errs []error) {
	views, errs = make([]ranking.RoomView, len(rooms)), make([]error, len(rooms))
	reads := make([]roomReads, len(rooms))
	p := r.c.Pipeline()
	for i, room := range rooms {
		k := RoomKeys(r.opt.Env, room)
		reads[i] = roomReads{
			keys:   k,
			st:     p.HMGet(ctx, k.Stable, fieldSeq, fieldList),
			top:    p.ZRevRangeWithScores(ctx, k.Ranking, 0, int64(r.opt.TopN-1)),
			card:   p.ZCard(ctx, k.Ranking),
			exists: p.Exists(ctx, k.Members, k.Ranking, k.Stable), // one hash tag: one slot
		}
	}
	_, _ = p.Exec(ctx) // each command keeps its own error
	for i, room := range rooms {
		v, err := r.finishView(ctx, room, reads[i])
		if err != nil {
			if !errors.Is(err, ranking.ErrUnknownRoom) {
				err = fmt.Errorf("sink: read room %q: %w", room, err)
			}
			errs[i] = err
			continue
		}
		views[i] = v
	}
	return views, errs
}

// roomReads are the pipelined commands that read one room.
type roomReads struct {
	keys   Keys
	st     *redis.SliceCmd
	top    *redis.ZSliceCmd
	card   *redis.IntCmd
	exists *redis.IntCmd
}

// finishView builds a room's view from its commands' replies.
func (r *Store) finishView(ctx context.Context, room string, q roomReads) (ranking.RoomView, error) {
	for _, c := range []redis.Cmder{q.st, q.top, q.card, q.exists} {
		if err := c.Err(); err != nil {
			return ranking.RoomView{}, err
		}
	}
	if q.exists.Val() == 0 {
		return ranking.RoomView{}, ranking.ErrUnknownRoom
	}
	v := ranking.RoomView{Room: room, Members: int(q.card.Val())}
	seq, list, err := parseStable(q.st.Val())
	if err != nil {
		return ranking.RoomView{}, err
	}
	v.Seq = seq

	v.Raw = make([]ranking.MemberView, 0, len(q.top.Val()))
	for _, z := range q.top.Val() {
		user, _ := z.Member.(string)
		m, err := r.memberFromScore(user, z.Score)
		if err != nil {
			return ranking.RoomView{}, err
		}
		v.Raw = append(v.Raw, m)
	}

	v.Stable = make([]ranking.MemberView, len(list))
	var missing []int // slots whose member is not in the raw top-N
	for i, user := range list {
		j := slices.IndexFunc(v.Raw, func(m ranking.MemberView) bool { return m.UserID == user })
		switch {
		case j >= 0:
			v.Stable[i] = v.Raw[j]
		default:
			v.Stable[i].UserID = user
			if user != "" {
				missing = append(missing, i)
			}
		}
	}
	if len(missing) > 0 {
		if err := r.fillFromStates(ctx, q.keys.Members, v.Stable, missing); err != nil {
			return ranking.RoomView{}, err
		}
	}
	return v, nil
}

// parseStable reads the seq and list fields of a stable hash (nil when absent).
func parseStable(vals []any) (seq int64, list []string, err error) {
	if s, ok := vals[0].(string); ok {
		if seq, err = strconv.ParseInt(s, 10, 64); err != nil {
			return 0, nil, fmt.Errorf("stable seq %q: %w", s, err)
		}
	}
	if s, ok := vals[1].(string); ok && s != "" {
		list = strings.Split(s, ",")
	}
	return seq, list, nil
}

func (r *Store) memberFromScore(user string, score float64) (ranking.MemberView, error) {
	s, err := r.opt.Meeting.Decode(score)
	if err != nil {
		return ranking.MemberView{}, fmt.Errorf("member %q: %w", user, err)
	}
	return ranking.MemberView{UserID: user, Audio: s.Audio, Volume: s.Volume, Video: s.Video,
		Role: s.Role.String(), ScreenShare: s.ScreenShare, Spotlight: s.Spotlight, Score: score, TS: s.TS}, nil
}

// fillFromStates reads the packed states of the members in slots and fills
// their views. A member without a stored state keeps only its id.
func (r *Store) fillFromStates(ctx context.Context, key string, views []ranking.MemberView, slots []int) error {
	users := make([]string, len(slots))
	for i, slot := range slots {
		users[i] = views[slot].UserID
	}
	vals, err := r.c.HMGet(ctx, key, users...).Result()
	if err != nil {
		return err
	}
	for i, slot := range slots {
		b, ok := vals[i].(string)
		if !ok {
			continue
		}
		var s ranking.MemberState
		if err := s.UnmarshalBinary([]byte(b)); err != nil {
			return fmt.Errorf("member %q: %w", users[i], err)
		}
		e := s.Effective()
		m := ranking.MemberView{UserID: users[i], Audio: e.Audio, Volume: e.Volume, Video: e.Video,
			Role: e.Role.String(), ScreenShare: e.ScreenShare, Spotlight: e.Spotlight, TS: e.MaxTS}
		if s.Ranked() {
			m.Score, _ = s.Score(r.opt.Meeting) // an unencodable state stays at 0
		}
		views[slot] = m
	}
	return nil
}

// Rooms lists up to max rooms of the environment, sorted by seq descending
// (the rooms whose stable list changed most often first), then by room id. It
// SCANs for the rooms' stable hashes on every master (each master of a Redis
// Cluster) and reads each room's seq and member count in one more pipelined
// round trip.
//
// The scan stops once max rooms are found, so with more rooms than max the
// result is the busiest of the rooms found first, not of all rooms: the cost
// stays bounded by max, not by the size of the key space. A room is listed
// from its first apply that touched the ranking (which creates its stable
// hash) until it expires.
func (r *Store) Rooms(ctx context.Context, max int) ([]ranking.RoomSummary, error) {
	if max <= 0 {
		return nil, nil
	}
	pattern := "rostrum:" + glob.Escape(r.opt.Env) + ":{*}:s"
	var (
		mu    sync.Mutex
		seen  = make(map[string]struct{})
		rooms []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, 512).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			for _, key := range keys {
				room, ok := roomOfKey(key)
				if _, dup := seen[room]; ok && !dup {
					seen[room] = struct{}{}
					rooms = append(rooms, room)
				}
			}
			full := len(rooms) >= max
			mu.Unlock()
			if full || next == 0 {
				return nil
			}
			cursor = next
		}
	}
	var err error
	if cc, ok := r.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, r.c)
	}
	if err != nil {
		return nil, fmt.Errorf("sink: list rooms: %w", err)
	}
	if len(rooms) == 0 {
		return []ranking.RoomSummary{}, nil
	}

	p := r.c.Pipeline()
	seqs := make([]*redis.SliceCmd, len(rooms))
	cards := make([]*redis.IntCmd, len(rooms))
	for i, room := range rooms {
		k := RoomKeys(r.opt.Env, room)
		seqs[i] = p.HMGet(ctx, k.Stable, fieldSeq)
		cards[i] = p.ZCard(ctx, k.Ranking)
	}
	if _, err := p.Exec(ctx); err != nil {
		return nil, fmt.Errorf("sink: list rooms: %w", err)
	}
	out := make([]ranking.RoomSummary, len(rooms))
	for i, room := range rooms {
		out[i] = ranking.RoomSummary{Room: room, Members: cards[i].Val()}
		if s, ok := seqs[i].Val()[0].(string); ok {
			if out[i].Seq, err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, fmt.Errorf("sink: list rooms: seq %q of %q: %w", s, room, err)
			}
		}
	}
	slices.SortFunc(out, func(a, b ranking.RoomSummary) int {
		return cmp.Or(cmp.Compare(b.Seq, a.Seq), cmp.Compare(a.Room, b.Room))
	})
	if len(out) > max {
		out = out[:max]
	}
	return out, nil
}

// roomOfKey returns the room id of a room key: the text between the first
// "{" and the "}" after it (room ids cannot contain braces).
func roomOfKey(key string) (string, bool) {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return "", false
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return "", false
	}
	return key[i+1 : i+1+j], true
}
