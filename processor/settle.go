package processor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/ranking"
)

// Settling the leaderboards' closed periods (docs/DESIGN.md §8 "Settled
// periods"). A period closes at its end + grace on the clock that judges
// lateness: record times. The settle loop settles at the later of the
// wall clock and the newest record time the batches saw, every
// BoardExpireEvery (so also without events) and as soon as a batch's
// record time passes the next close. Each settled period's record goes
// through the boards' outbox: written by the step that finishes the
// snapshot, published here with key "board/period" on {env}.boards.settled
// (a boards.settled/1 record, docs/topics/settled-boards.md), then
// acknowledged (removed). A claim with a lease keeps two processors
// from publishing one record at once; a processor that dies between the
// broker's ack and its own leaves the record to be published again, with
// the same bytes, after the lease.

// settleLease is how long a claimed outbox record is left to its claimant.
const settleLease = 30 * time.Second

func newSettleToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// advance implements boardStage.
func (s *boards) advance(b *batch) {
	if s.cur == b {
		s.cur = nil
	}
	var newest int64
	for _, r := range b.recs {
		newest = max(newest, r.Timestamp.UnixMilli())
	}
	for {
		old := s.clock.Load()
		if newest <= old || s.clock.CompareAndSwap(old, newest) {
			break
		}
	}
	if nc := s.nextClose.Load(); nc > 0 && newest >= nc {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// settle implements boardStage. Every step is atomic and recorded in
// Redis, so a failed one is simply made again.
func (s *boards) settle(ctx context.Context) {
	t := time.NewTicker(s.p.cfg.BoardExpireEvery)
	defer t.Stop()
	failing := false
	for {
		err := s.settleOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			s.p.lg.Warn("board settlement failed; retrying every tick", zap.Error(err))
			failing = true
		case err == nil && failing:
			s.p.lg.Info("board settlement works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// settleOnce settles what has closed and publishes the outbox.
func (s *boards) settleOnce(ctx context.Context) error {
	now := time.Now()
	if c := s.clock.Load(); c > now.UnixMilli() {
		now = time.UnixMilli(c)
	}
	var next time.Time
	for _, b := range s.p.cfg.Boards {
		if !b.Settles() {
			continue
		}
		c := b.Period(now.Add(-b.Grace())).End.Add(b.Grace())
		if next.IsZero() || c.Before(next) {
			next = c
		}
	}
	if !next.IsZero() {
		s.nextClose.Store(next.UnixMilli())
	}
	if _, err := s.store.Settle(ctx, now); err != nil {
		if errors.Is(err, ranking.ErrRedisReset) {
			return fmt.Errorf("settle: %w (the batches replay the log first)", err)
		}
		return err
	}
	return s.publishSettled(ctx)
}

// publishSettled publishes the outbox records this processor claims and
// acknowledges each once the broker has.
func (s *boards) publishSettled(ctx context.Context) error {
	p := s.p
	for {
		recs, err := s.store.ClaimSettled(ctx, s.token, time.Now(), settleLease)
		if err != nil || len(recs) == 0 {
			return err
		}
		out := make([]*kgo.Record, len(recs))
		for i, r := range recs {
			out[i] = &kgo.Record{Topic: p.topics.Settled, Key: []byte(r.Key()), Value: r.Value,
				Headers: recordHeaders(codec.SchemaSettled)}
		}
		pctx, cancel := context.WithTimeout(ctx, settleLease/2)
		err = p.cl.ProduceSync(pctx, out...).FirstErr()
		cancel()
		if err != nil {
			return fmt.Errorf("produce settled periods: %w", err)
		}
		for _, r := range recs {
			if err := s.store.AckSettled(ctx, r); err != nil {
				return err
			}
		}
	}
}
