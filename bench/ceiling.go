package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/sink"
)

// Ceiling settings: what the fastest plain Go writer of Redis does on this
// kind of machine (batches of 1024 ZADDs, 4 connections in parallel).
const (
	ceilingBatch = 1024
	ceilingConns = 4
)

// ceiling writes one ZADD per workload event, of the same room, member and
// score (the event's alone, as naive computes it; event times are
// consecutive milliseconds, so that scores change), in pipelines of ceilingBatch commands over ceilingConns
// connections, with no decoding and no other processing: the rate Redis
// itself allows. Keys, members and scores are prepared before the clock
// starts.
func (b *runner) ceiling(ctx context.Context) (Result, error) {
	w := b.w
	if err := b.flush(ctx); err != nil {
		return Result{}, err
	}
	meeting := codec.NewMeeting(time.Time{})
	first := time.Now().UnixMilli() - int64(len(w.Events))
	keys := make([]string, len(w.RoomIDs))
	for i, id := range w.RoomIDs {
		keys[i] = sink.RoomKeys(envCeiling, id).Ranking
	}
	users := make([]string, w.Members)
	for i := range users {
		users[i] = userID(int32(i))
	}
	zs := make([]redis.Z, len(w.Events))
	for i, ev := range w.Events {
		ts := first + int64(i)
		score, ok := scoreOf(meeting, ev.Type, int64(ev.Value), ts)
		if !ok { // leave, excluded role: written as a new member's score
			score, _ = scoreOf(meeting, codec.TypeJoin, 0, ts)
		}
		zs[i] = redis.Z{Score: score, Member: users[ev.Member]}
	}

	hook := &roundTrips{}
	rc := b.newClient(ceilingConns)
	defer rc.Close()
	rc.AddHook(hook)
	if err := rc.Ping(ctx).Err(); err != nil { // dial before the clock starts
		return Result{}, err
	}
	m := meter{admin: b.admin, hook: hook}
	before, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	start := time.Now()
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range ceilingConns {
		g.Go(func() error {
			for {
				from := int(next.Add(ceilingBatch)) - ceilingBatch
				if from >= len(zs) {
					return nil
				}
				p := rc.Pipeline()
				for i := from; i < min(from+ceilingBatch, len(zs)); i++ {
					p.ZAdd(gctx, keys[w.Events[i].Room], zs[i])
				}
				if _, err := p.Exec(gctx); err != nil {
					return fmt.Errorf("bench: ceiling ZADD pipeline: %w", err)
				}
			}
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(start)
	after, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	r := Result{Mode: ModeCeiling, Events: int64(len(zs)), Seconds: elapsed.Seconds()}
	r.EventsPerSec = float64(r.Events) / r.Seconds
	fill(&r, before, after, int64((len(zs)+ceilingBatch-1)/ceilingBatch))
	m.fillNodes(&r, before, after)
	return r, b.memory(ctx, &r, envCeiling, before.redis.usedMemory)
}
