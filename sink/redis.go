package sink

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// Options configure a Redis sink.
type Options struct {
	Env     string         // environment, part of every key; required
	TopN    int            // size of the raw and stable top lists; default 7
	RoomTTL time.Duration  // idle rooms expire this long after their last write (at the earliest 7/8 of it; see the package doc); default 24h
	Meeting *codec.Meeting // score layout; default codec.NewMeeting(codec.DefaultEpoch)
	// MaxMembers caps the members (ranked or not) kept per room; a new
	// member beyond it is refused and reported in RoomState.Refused, while
	// existing members keep working. Default 0: no cap.
	MaxMembers int
	// CacheMembers bounds the member states kept in process memory (about
	// 170 bytes each) so that an apply merges and scores them in Go and
	// sends Redis only the results (see stateCache). 0: off, every apply
	// merges in Lua; `rostrum run`'s default is DefaultCacheMembers.
	CacheMembers int
	Logger       *zap.Logger // nil: no logs
}

// Redis is the meeting ranking store. It is safe for concurrent use; the
// processor calls it once or twice per poll batch.
type Redis struct {
	c    redis.UniversalClient
	lua  *redisscript.Runner // runs the scripts of scripts.go through c
	opt  Options
	args [9]any // fixed leading arguments of the apply script
	gen  atomic.Pointer[string]
	due  atomic.Pointer[ranking.DuePeek] // the due set's earliest entry, as the last Apply saw it
	// cache holds rooms' member states as last written; nil when disabled.
	cache *stateCache
}

// Validate reports the first invalid option as a *config.FieldError
// naming the Options field.
func (opt Options) Validate() error {
	switch {
	case opt.Env == "":
		return config.Errorf("sink.Options", "Env", "is required")
	case opt.TopN < 0 || opt.TopN > 100:
		return config.Errorf("sink.Options", "TopN", "must be between 0 (default 7) and 100, got %d", opt.TopN)
	case opt.RoomTTL < 0:
		return config.Errorf("sink.Options", "RoomTTL", "must not be negative (0: default 24h), got %s", opt.RoomTTL)
	case opt.MaxMembers < 0:
		return config.Errorf("sink.Options", "MaxMembers", "must be >= 0 (0: no cap), got %d", opt.MaxMembers)
	case opt.CacheMembers < 0:
		return config.Errorf("sink.Options", "CacheMembers", "must be >= 0 (0: off), got %d", opt.CacheMembers)
	}
	return nil
}

// New returns a sink writing through c, which may be a single node, a
// failover or a cluster client.
func New(c redis.UniversalClient, opt Options) (*Redis, error) {
	if opt.TopN == 0 {
		opt.TopN = 7
	}
	if opt.RoomTTL == 0 {
		opt.RoomTTL = 24 * time.Hour
	}
	if opt.Meeting == nil {
		opt.Meeting = codec.NewMeeting(codec.DefaultEpoch)
	}
	if opt.Logger == nil {
		opt.Logger = zap.NewNop()
	}
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	r := &Redis{c: c, lua: redisscript.NewRunner(c, scripts...), opt: opt, cache: newStateCache(opt.CacheMembers)}
	f := opt.Meeting.Layout().Fields()
	mult := func(name string) string {
		for _, fi := range f {
			if fi.Name == name {
				return strconv.FormatUint(1<<fi.Shift, 10)
			}
		}
		panic("sink: meeting layout lacks field " + name)
	}
	var tmax uint64
	for _, fi := range f {
		if fi.Name == "time" {
			tmax = fi.Max
		}
	}
	r.args = [9]any{
		strconv.FormatInt(opt.RoomTTL.Milliseconds(), 10),
		strconv.Itoa(opt.TopN),
		strconv.FormatInt(opt.Meeting.Epoch().UnixMilli(), 10),
		strconv.FormatUint(tmax, 10),
		mult("audio"), mult("volume"), mult("video"), mult("role"),
		strconv.Itoa(opt.MaxMembers),
	}
	return r, nil
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("sink: redis ping: %w", err)
	}
	return nil
}

// Apply writes the rooms' updates, each room in one atomic script guarded
// by its watermarks, and clears the pending marks of acks, all in one
// pipelined round trip. It returns one RoomState per room, in order. The
// same round trip peeks at the due set's earliest entry (see PeekDue).
//
// A room whose member states the sink holds (see stateCache) is merged and
// scored here and written by the small fastLua; the others, and any room
// that another writer changed since, take applyLua, whose reply refills the
// cache. Only a room another writer changed costs a second round trip.
//
// The same round trip reads the generation marker: when it differs from the
// adopted one, Apply returns ranking.ErrRedisReset (see there).
func (r *Redis) Apply(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack) ([]ranking.RoomState, error) {
	states, _, err := r.ApplyMerge(ctx, rooms, acks, nil)
	return states, err
}

// ApplyMerge is Apply, where rooms whose stable hash the state cache also
// knows are merged (merge is called with the state the apply will leave)
// and their updates stored by the apply's own script: one round trip and
// one script per room instead of two. merged[i].Done tells which rooms.
// A merged update's Due is entered in the due set in the same round trip.
func (r *Redis) ApplyMerge(ctx context.Context, rooms []ranking.RoomUpdate, acks []ranking.Ack, merge ranking.StableStep) (states []ranking.RoomState, merged []ranking.Merged, err error) {
	var plans []*fastPlan
	if r.cache != nil {
		if plans, acks, err = r.plan(rooms, acks, merge); err != nil {
			r.forget(rooms)
			return nil, nil, err
		}
	}
	var gen *redis.StringCmd
	var due *redis.ZSliceCmd
	cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		gen = p.Get(ctx, generationKey(r.opt.Env))
		due = p.ZRangeWithScores(ctx, dueKey(r.opt.Env), 0, 0)
		for _, a := range acks {
			p.Run(ctx, ackLua, []string{RoomKeys(r.opt.Env, a.Room).Stable}, a.Seq)
		}
		out := make([]*redis.Cmd, len(rooms))
		for i := range rooms {
			if plans != nil && plans[i] != nil {
				out[i] = r.fastRoom(ctx, p, &rooms[i], plans[i])
			} else {
				out[i] = r.applyRoom(ctx, p, &rooms[i], false)
			}
		}
		for _, pl := range plans {
			if pl != nil && pl.update != nil && pl.update.Due > 0 {
				p.Do(ctx, "ZADD", dueKey(r.opt.Env), "LT", pl.update.Due, pl.update.Room)
			}
		}
		return out
	})
	if err != nil {
		r.forget(rooms)
		return nil, nil, err
	}
	if r.cache != nil {
		for i := range acks {
			r.cache.acked(&acks[i])
		}
	}
	if zs, err := due.Result(); err == nil {
		peek := &ranking.DuePeek{Seen: time.Now()}
		if len(zs) > 0 {
			peek.At = int64(zs[0].Score)
		}
		r.due.Store(peek)
	}
	states = make([]ranking.RoomState, len(rooms))
	merged = make([]ranking.Merged, len(rooms))
	var again []int
	var rolledBack error
	for i, c := range cmds {
		if plans != nil && plans[i] != nil {
			ok, err := r.finishFast(c, &rooms[i], plans[i], &states[i])
			if errors.Is(err, ErrRedisRolledBack) {
				rolledBack, err = err, nil
			}
			if err != nil {
				r.forget(rooms)
				return nil, nil, err
			}
			if !ok {
				again = append(again, i)
			} else if plans[i].merged != nil {
				merged[i] = ranking.Merged{Done: true, Update: plans[i].update}
			}
			continue
		}
		if err := r.finishFull(c, rooms[i].Room, &states[i]); err != nil {
			r.forget(rooms)
			return nil, nil, err
		}
	}
	if len(again) > 0 {
		cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
			out := make([]*redis.Cmd, len(again))
			for j, i := range again {
				if a := plans[i].ack; a != nil {
					p.Run(ctx, ackLua, []string{RoomKeys(r.opt.Env, a.Room).Stable}, a.Seq)
				}
				out[j] = r.applyRoom(ctx, p, &rooms[i], false)
			}
			return out
		})
		if err != nil {
			r.forget(rooms)
			return nil, nil, err
		}
		for j, i := range again {
			if err := r.finishFull(cmds[j], rooms[i].Room, &states[i]); err != nil {
				r.forget(rooms)
				return nil, nil, err
			}
		}
	}
	if err := r.checkGeneration(gen); err != nil {
		if r.cache != nil && errors.Is(err, ranking.ErrRedisReset) {
			r.cache.clear()
		}
		return nil, nil, err
	}
	if rolledBack != nil {
		// The apply ran fully (the rooms concerned took the full script);
		// the caller rebuilds what Redis lost.
		r.cache.clear()
		return nil, nil, rolledBack
	}
	return states, merged, nil
}

// forget drops rooms from the state cache after a failed apply: what Redis
// holds for them is not known.
func (r *Redis) forget(rooms []ranking.RoomUpdate) {
	if r.cache == nil {
		return
	}
	names := make([]string, len(rooms))
	for i := range rooms {
		names[i] = rooms[i].Room
	}
	r.cache.drop(names...)
}

// finishFull reads applyLua's reply into st and refills the cache from it.
func (r *Redis) finishFull(c *redis.Cmd, room string, st *ranking.RoomState) error {
	token, pairs, err := parseRoomState(c, room, st)
	if err != nil {
		return err
	}
	if r.cache == nil {
		return nil
	}
	r.cache.full.Add(1)
	if token == "" {
		r.cache.drop(room)
		return nil
	}
	return r.cache.put(room, token, pairs, st, r.opt.Meeting)
}

// Read returns the rooms' stable and raw top lists without changing them.
func (r *Redis) Read(ctx context.Context, rooms []string) ([]ranking.RoomState, error) {
	ups := make([]ranking.RoomUpdate, len(rooms))
	for i, room := range rooms {
		ups[i].Room = room
	}
	return r.Apply(ctx, ups, nil)
}

// Rebuild applies rooms' updates while rebuilding lost state: parts at or
// below a watermark are applied too (the batch in hand may already have
// raised a watermark past older batches that still need applying). Member
// registers merge idempotently, so re-applying is harmless for the meeting
// ranking. Watermarks only ever rise.
func (r *Redis) Rebuild(ctx context.Context, rooms []ranking.RoomUpdate) error {
	r.forget(rooms)
	_, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(rooms))
		for i := range rooms {
			out[i] = r.applyRoom(ctx, p, &rooms[i], true)
		}
		return out
	})
	return err
}

func (r *Redis) applyRoom(ctx context.Context, p *redisscript.Pipe, u *ranking.RoomUpdate, force bool) *redis.Cmd {
	k := RoomKeys(r.opt.Env, u.Room)
	n := len(r.args) + 4
	for _, part := range u.Parts {
		n += 3 + 2*len(part.Members)
	}
	args := make([]any, 0, n)
	args = append(args, r.args[:]...)
	f := "0"
	if force {
		f = "1"
	}
	token, want := "", "0"
	if r.cache != nil {
		token = r.cache.token()
		if !force {
			want = "1"
		}
	}
	args = append(args, f, token, want, len(u.Parts))
	for _, part := range u.Parts {
		args = append(args, partName(&part), part.Last, len(part.Members))
		for i := range part.Members {
			m := &part.Members[i]
			args = append(args, m.UserID, m.State.AppendBinary(make([]byte, 0, ranking.StateSize)))
		}
	}
	return p.Run(ctx, applyLua, []string{k.Members, k.Ranking, k.Stable, k.Watermarks}, args...)
}

// partName names a topic-partition in the watermark hash.
func partName(p *ranking.Part) string { return p.Topic + "/" + strconv.Itoa(int(p.Partition)) }

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

// StoreStable stores the lists in one pipelined round trip. stored[i] is false
// when room i's seq, ranking or hysteresis state moved on since it was read
// (another processor stored a list or changed the ranking first); the caller
// reads the room again and merges anew.
//
// The same round trip enters each update's Due time in the environment's
// due set (ZADD LT: an entry only ever moves earlier here). That key is in
// another hash slot than the room, so it is a command of its own, run even
// when the compare-and-set fails: an entry too early only costs one step
// that changes nothing, while a missing one would leave a decision waiting
// for the room's next event.
func (r *Redis) StoreStable(ctx context.Context, ups []ranking.StableUpdate) (stored []bool, err error) {
	ttl := r.args[0]
	due := dueKey(r.opt.Env)
	if r.cache != nil {
		defer func() {
			if err != nil { // not known which updates were stored
				for i := range ups {
					r.cache.stored(&ups[i], false)
				}
			}
		}()
	}
	cmds, err := r.run(ctx, func(p *redisscript.Pipe) []*redis.Cmd {
		out := make([]*redis.Cmd, len(ups), 2*len(ups))
		for i, u := range ups {
			bump := "1"
			if u.StateOnly {
				bump = "0"
			}
			out[i] = p.Run(ctx, commitLua, []string{RoomKeys(r.opt.Env, u.Room).Stable},
				u.PrevSeq, u.Version, strings.Join(u.List, ","), u.Out, ttl, u.PrevState, u.State, bump)
		}
		for _, u := range ups {
			if u.Due > 0 {
				out = append(out, p.Do(ctx, "ZADD", due, "LT", u.Due, u.Room))
			}
		}
		return out
	})
	if err != nil {
		return nil, err
	}
	stored = make([]bool, len(ups))
	for i, c := range cmds[:len(ups)] {
		n, err := c.Int64()
		if err != nil {
			return nil, fmt.Errorf("sink: store stable list of %q: %w", ups[i].Room, err)
		}
		stored[i] = n == 1
		if r.cache != nil {
			r.cache.stored(&ups[i], stored[i])
		}
	}
	return stored, nil
}

// run executes one pipeline and fails with the first error of the commands
// fill returns. When Redis lost its scripts (a restart, a failover, SCRIPT
// FLUSH), the script calls that failed with NOSCRIPT did not run; run loads
// the scripts and runs those calls alone again (see redisscript.Runner), so
// no call takes effect twice.
func (r *Redis) run(ctx context.Context, fill func(p *redisscript.Pipe) []*redis.Cmd) ([]*redis.Cmd, error) {
	var cmds []*redis.Cmd
	if err := r.lua.Pipelined(ctx, func(p *redisscript.Pipe) { cmds = fill(p) }); err != nil {
		return nil, fmt.Errorf("sink: load scripts: %w", err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return nil, fmt.Errorf("sink: redis pipeline: %w", err)
		}
	}
	return cmds, nil
}

// LoadScripts loads the Lua scripts into Redis (every master of a cluster).
func (r *Redis) LoadScripts(ctx context.Context) error {
	if err := r.lua.Load(ctx); err != nil {
		return fmt.Errorf("sink: load scripts: %w", err)
	}
	return nil
}
