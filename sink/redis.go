package sink

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/ranking"
)

// Config configures a Store.
type Config struct {
	Env     string         // environment, part of every key; required
	TopN    int            // size of the raw and stable top lists; default 7
	RoomTTL time.Duration  // idle rooms expire this long after their last write (at the earliest 7/8 of it; see the package doc); default 24h
	Meeting *codec.Meeting // score layout; default codec.NewMeeting(codec.DefaultEpoch)
	// MaxMembers caps the members (ranked or not) kept per room; a new
	// member beyond it is refused and reported in RoomState.Refused, while
	// existing members keep working. Default 0: no cap.
	MaxMembers int
	// CacheMembers bounds the member states kept in process memory (about
	// 190 bytes each) so that a room's apply is planned from them and
	// costs one round trip (see stateCache). 0: none kept, every apply
	// reads its rooms first, a second round trip; `rostrum run`'s default
	// is DefaultCacheMembers.
	CacheMembers int
	// RoomsPerScript is how many cached rooms one call of the fast script
	// applies on a single Redis node (see lua/fast.lua): a call costs Redis
	// about as much again as a small room's own commands. 1: a call per
	// room. Against a Redis Cluster every call holds one room, whatever
	// this says. Default DefaultRoomsPerScript.
	RoomsPerScript int
	Logger         *zap.Logger // nil: no logs
}

// DefaultRoomsPerScript is Config.RoomsPerScript's default: enough rooms
// that the call's own cost is spread thin, few enough that one call blocks
// Redis for a few milliseconds at most.
const DefaultRoomsPerScript = 64

// Store is the meeting ranking store in Redis. It is safe for concurrent use; the
// processor calls it once or twice per poll batch.
type Store struct {
	c   redis.UniversalClient
	lua *redisscript.Runner // runs the scripts of scripts.go through c
	opt Config
	gen atomic.Pointer[string]
	due atomic.Pointer[ranking.DuePeek] // the due set's earliest entry, as the last Apply saw it
	// The scripts' arguments that are the same for every call, boxed
	// once: fastLua's head (fastArgs) for Apply and for Rebuild,
	// loadLua's (loadArgs), and Config.RoomTTL in ms.
	fastHead, fastHeadForce, loadHead []any
	ttlArg                            any
	// cache holds rooms' member states as last written.
	cache *stateCache
	// trips and segments count the applies' round trips and the
	// segments they were sent in (see roundTrip).
	trips, segments atomic.Int64
	// perSegment, when set, is the rooms per segment of a round trip
	// (see segmentRooms), for tests.
	perSegment int
}

// Validate reports the first invalid option as a *config.FieldError
// naming the Config field.
func (opt Config) Validate() error {
	switch {
	case opt.Env == "":
		return config.Errorf("sink.Config", "Env", "is required")
	case opt.TopN < 0 || opt.TopN > 100:
		return config.Errorf("sink.Config", "TopN", "must be between 0 (default 7) and 100, got %d", opt.TopN)
	case opt.RoomTTL < 0:
		return config.Errorf("sink.Config", "RoomTTL", "must not be negative (0: default 24h), got %s", opt.RoomTTL)
	case opt.MaxMembers < 0:
		return config.Errorf("sink.Config", "MaxMembers", "must be >= 0 (0: no cap), got %d", opt.MaxMembers)
	case opt.CacheMembers < 0:
		return config.Errorf("sink.Config", "CacheMembers", "must be >= 0 (0: none kept), got %d", opt.CacheMembers)
	case opt.RoomsPerScript < 0 || opt.RoomsPerScript > 1024:
		return config.Errorf("sink.Config", "RoomsPerScript", "must be between 0 (default %d) and 1024, got %d", DefaultRoomsPerScript, opt.RoomsPerScript)
	}
	return nil
}

// New returns a sink writing through c, which may be a single node, a
// failover or a cluster client.
func New(c redis.UniversalClient, opt Config) (*Store, error) {
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
	if opt.RoomsPerScript == 0 {
		opt.RoomsPerScript = DefaultRoomsPerScript
	}
	if _, cluster := c.(*redis.ClusterClient); cluster {
		opt.RoomsPerScript = 1 // a script's keys must share a slot
	}
	rooms := roomConfig{topN: opt.TopN, topMax: goTopMax, maxMembers: opt.MaxMembers, meeting: opt.Meeting}
	r := &Store{c: c, lua: redisscript.NewRunner(c, scripts...), opt: opt, cache: newStateCache(opt.CacheMembers, rooms)}
	ttl := opt.RoomTTL.Milliseconds()
	r.fastHead = (&fastArgs{ttl: ttl, topN: opt.TopN, rules: opt.Meeting.Version()}).append(nil)
	r.fastHeadForce = (&fastArgs{ttl: ttl, topN: opt.TopN, rules: opt.Meeting.Version(), force: true}).append(nil)
	r.loadHead = (&loadArgs{whole: max(opt.CacheMembers, goTopMax), rules: opt.Meeting.Version()}).append(nil)
	r.ttlArg = ttl
	return r, nil
}

// Ping checks that Redis answers.
func (r *Store) Ping(ctx context.Context) error {
	if err := r.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("sink: redis ping: %w", err)
	}
	return nil
}

// run executes one pipeline and fails with the first error of the commands
// fill returns. When Redis lost its scripts (a restart, a failover, SCRIPT
// FLUSH), the script calls that failed with NOSCRIPT did not run; run loads
// the scripts and runs those calls alone again (see redisscript.Runner), so
// no call takes effect twice.
func (r *Store) run(ctx context.Context, fill func(p *redisscript.Pipe) []*redis.Cmd) ([]*redis.Cmd, error) {
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
func (r *Store) LoadScripts(ctx context.Context) error {
	if err := r.lua.Load(ctx); err != nil {
		return fmt.Errorf("sink: load scripts: %w", err)
	}
	return nil
}
