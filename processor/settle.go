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

// noteRecordTimes advances the settle clock to the newest record time of a
// batch and wakes the settle loop when it passed the next period's close.
func (p *Processor) noteRecordTimes(recs []*kgo.Record) {
	if p.settleKick == nil {
		return
	}
	var newest int64
	for _, r := range recs {
		newest = max(newest, r.Timestamp.UnixMilli())
	}
	for {
		old := p.boardClock.Load()
		if newest <= old || p.boardClock.CompareAndSwap(old, newest) {
			break
		}
	}
	if nc := p.nextClose.Load(); nc > 0 && newest >= nc {
		select {
		case p.settleKick <- struct{}{}:
		default:
		}
	}
}

// settleBoards settles and publishes until ctx ends. Every step is atomic
// and recorded in Redis, so a failed one is simply made again.
func (p *Processor) settleBoards(ctx context.Context) {
	t := time.NewTicker(p.cfg.BoardExpireEvery)
	defer t.Stop()
	failing := false
	for {
		err := p.settleOnce(ctx)
		switch {
		case err != nil && ctx.Err() == nil && !failing:
			p.lg.Warn("board settlement failed; retrying every tick", zap.Error(err))
			failing = true
		case err == nil && failing:
			p.lg.Info("board settlement works again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-p.settleKick:
		}
	}
}

// settleOnce settles what has closed and publishes the outbox.
func (p *Processor) settleOnce(ctx context.Context) error {
	now := time.Now()
	if c := p.boardClock.Load(); c > now.UnixMilli() {
		now = time.UnixMilli(c)
	}
	var next time.Time
	for _, b := range p.cfg.Boards {
		if !b.Settles() {
			continue
		}
		c := b.Period(now.Add(-b.Grace())).End.Add(b.Grace())
		if next.IsZero() || c.Before(next) {
			next = c
		}
	}
	if !next.IsZero() {
		p.nextClose.Store(next.UnixMilli())
	}
	if _, err := p.cfg.BoardStore.Settle(ctx, now); err != nil {
		if errors.Is(err, ranking.ErrRedisReset) {
			return fmt.Errorf("settle: %w (the batches replay the log first)", err)
		}
		return err
	}
	return p.publishSettled(ctx)
}

// publishSettled publishes the outbox records this processor claims and
// acknowledges each once the broker has.
func (p *Processor) publishSettled(ctx context.Context) error {
	for {
		recs, err := p.cfg.BoardStore.ClaimSettled(ctx, p.settleToken, time.Now(), settleLease)
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
			if err := p.cfg.BoardStore.AckSettled(ctx, r); err != nil {
				return err
			}
		}
	}
}
