package board

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// Store keeps the boards of one environment in Redis. It is safe for
// concurrent use: one processor goroutine applies batches, another expires
// slices, HTTP handlers read. Apply must be called by one goroutine at a
// time per Batch.
type Store struct {
	rdb    redis.UniversalClient
	lua    *redisscript.Runner // runs the scripts of scripts.go through rdb
	env    string
	boards []*boarddef.Board
	byName map[string]*boarddef.Board
	now    func() time.Time
	gen    string
	page   int // members one settle call copies; SettlePage

	mu    sync.Mutex
	known map[string]bool // "board@label": periods registered (registry.go)
}

// NewStore returns a store for boards in environment env, writing through
// rdb (a single node, failover or cluster client).
func NewStore(rdb redis.UniversalClient, env string, boards []*boarddef.Board) *Store {
	s := &Store{rdb: rdb, lua: redisscript.NewRunner(rdb, scripts...), env: env, boards: boards, byName: map[string]*boarddef.Board{}, now: time.Now, page: SettlePage, known: map[string]bool{}}
	for _, b := range boards {
		s.byName[b.Name()] = b
	}
	return s
}

// SetClock replaces the clock the read methods use to find the current
// period (tests, replays). Call it before the store is used.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Board returns the board named name.
func (s *Store) Board(name string) (*boarddef.Board, bool) { b, ok := s.byName[name]; return b, ok }

// List returns the store's boards, in configuration order.
func (s *Store) List() []*boarddef.Board { return s.boards }

// NewBatch returns an empty batch for the store's boards.
func (s *Store) NewBatch() *Batch { return NewBatch(s.boards) }

// prefix returns the common prefix of a board's keys; the braces are the
// board's hash tag.
func (s *Store) prefix(b *boarddef.Board) string {
	return "rostrum:" + s.env + ":board:{" + b.Name() + "}:"
}

// Adopt makes Apply expect Redis generation gen (the sink's generation
// marker) and stamps every board with it: after Redis lost its data, a
// board's scripts refuse to apply until the processor has noticed and
// replays its log under the new generation. The stamp overwrites: a board
// may hold another generation without having lost its keys (Redis lost
// the marker alone, or a processor that read the marker just before a
// loss stamped the emptied Redis with it), and a stamp that kept it would
// make every later call refuse, for ever; the log replay that follows each
// Adopt re-applies what the board lost, and its ranges skip the rest.
// On a periodic board it stamps every registered period (registry.go).
func (s *Store) Adopt(ctx context.Context, gen string) error {
	if err := s.adoptPeriods(ctx, gen, time.Now()); err != nil { // the wall clock: Redis expires the periods' keys by its own
		return err
	}
	p := s.rdb.Pipeline()
	for _, b := range s.boards {
		p.HSet(ctx, s.prefix(b)+"w", fieldGen, gen)
	}
	if _, err := p.Exec(ctx); err != nil {
		return fmt.Errorf("board: adopt generation: %w", err)
	}
	s.gen = gen
	return nil
}

// Counters returns a board's counters kept in Redis: events found late by
// the scripts, and score updates that saturated at max-total. A periodic
// board keeps them per period: they are summed over the periods not
// expired yet.
func (s *Store) Counters(ctx context.Context, board string) (late, saturated int64, err error) {
	b, ok := s.byName[board]
	if !ok {
		return 0, 0, fmt.Errorf("%w: %q", boarddef.ErrUnknownBoard, board)
	}
	if b.Kind() == boarddef.Periodic {
		n, err := s.periodCounters(ctx, b, s.now(), fieldLate, fieldSaturated)
		if err != nil {
			return 0, 0, fmt.Errorf("board %s: counters: %w", board, err)
		}
		return n[0], n[1], nil
	}
	v, err := s.rdb.HMGet(ctx, s.prefix(b)+"n", fieldLate, fieldSaturated).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("board %s: counters: %w", board, err)
	}
	num := func(x any) int64 { sv, _ := x.(string); n, _ := strconv.ParseInt(sv, 10, 64); return n }
	return num(v[0]), num(v[1]), nil
}

// eval runs n calls of script in one pipeline and fails with the first
// error other than redis.Nil. Calls that fail with NOSCRIPT (Redis
// restarted, failed over or flushed its scripts) did not run; they are run
// again, alone, after loading the scripts, and the others' results stand,
// so nothing is applied twice (see redisscript.Runner).
func (s *Store) eval(ctx context.Context, script *redisscript.Script, n int, args func(k int) ([]string, []any)) ([]*redis.Cmd, error) {
	return s.evalEach(ctx, n, func(k int) (*redisscript.Script, []string, []any) {
		keys, a := args(k)
		return script, keys, a
	})
}

// evalEach is eval with a script of its own per call.
func (s *Store) evalEach(ctx context.Context, n int, args func(k int) (*redisscript.Script, []string, []any)) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, n)
	err := s.lua.Pipelined(ctx, func(p *redisscript.Pipe) {
		for k := range n {
			script, keys, a := args(k)
			cmds[k] = p.Run(ctx, script, keys, a...)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("board: load scripts: %w", err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && err != redis.Nil {
			return nil, fmt.Errorf("board: redis: %w", err)
		}
	}
	return cmds, nil
}

// LoadScripts loads the Lua scripts into Redis (every master of a cluster).
func (s *Store) LoadScripts(ctx context.Context) error {
	if err := s.lua.Load(ctx); err != nil {
		return fmt.Errorf("board: load scripts: %w", err)
	}
	return nil
}
