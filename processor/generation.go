package processor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
)

// Tracking the Redis data set across restarts and idle periods.
//
// The Apply round trip notices that Redis lost its data (ranking.ErrRedisReset)
// only when this processor has a batch to apply. Two cases escape that:
//
//   - the processor was not running when Redis lost its data (killed,
//     restarting, being deployed). At start it adopts whatever generation
//     Redis has, so without more it would never re-apply what its WAL
//     holds; the other processors rebuild only from their own WALs.
//   - the processor is running but idle: its partitions have no new records,
//     so it never calls Apply.
//
// For the first, the generation the WAL was last applied to is kept in
// Config.GenerationFile; at start a missing file, or one naming another
// generation, makes the processor rebuild (recover.go) before it consumes.
// For the second, an idle processor checks the generation every
// Config.GenerationCheckEvery.

// generation is the processor goroutine's view of the Redis data set.
type generation struct {
	adopted   string    // the generation marker adopted in the store
	rebuild   bool      // rebuild before consuming (set by New)
	lastCheck time.Time // last idle check
}

// loadGeneration decides, in New, whether the WAL must be re-applied
// before consuming: the generation file is missing or names another
// generation than current.
func (p *Processor) loadGeneration(current string) error {
	p.gen.adopted = current
	if p.cfg.GenerationFile == "" {
		return nil
	}
	b, err := os.ReadFile(p.cfg.GenerationFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.gen.rebuild = true
	case err != nil:
		return fmt.Errorf("generation file: %w", err)
	case strings.TrimSpace(string(b)) != current:
		p.gen.rebuild = true
	}
	return nil
}

// saveGeneration records that the WAL has been applied to Redis generation
// gen. It writes a temporary file and renames it, so that a crash leaves the
// old content or the new one.
func (p *Processor) saveGeneration(gen string) error {
	p.gen.adopted = gen
	if p.cfg.GenerationFile == "" {
		return nil
	}
	tmp := p.cfg.GenerationFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(gen+"\n"), 0o644); err != nil {
		return fmt.Errorf("generation file: %w", err)
	}
	if err := os.Rename(tmp, p.cfg.GenerationFile); err != nil {
		return fmt.Errorf("generation file: %w", err)
	}
	return nil
}

// rebuildAtStart re-applies the WAL when New found that Redis may have lost
// what it holds, retrying with backoff until it succeeds or ctx ends.
func (p *Processor) rebuildAtStart(ctx context.Context) error {
	if !p.gen.rebuild {
		return nil
	}
	// Also on a first start (no file yet): the Redis generation may have
	// just been created by this processor on an emptied Redis, and the
	// stable lists must then be seeded from the output topic before any
	// new seq is stored. With an empty WAL the rebuild only reads the
	// output topic.
	p.lg.Warn("no record that this WAL was applied to the current redis generation: rebuilding before consuming",
		zap.String("generation_file", p.cfg.GenerationFile))
	backoff := p.cfg.Retry.Backoff
	for {
		_, err := p.recoverRedis(ctx)
		if err == nil {
			p.gen.rebuild = false
			return nil
		}
		p.lg.Warn("rebuild at start failed, retrying", zap.Duration("backoff", backoff), zap.Error(err))
		select {
		case <-ctx.Done():
			// A clean stop: the generation file is not updated, so the
			// next start rebuilds again.
			p.lg.Info("stopped before the rebuild at start succeeded", zap.Error(err))
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// checkIdle runs when a poll returned nothing: at most every
// GenerationCheckEvery it compares Redis's generation marker with the
// adopted one and rebuilds when they differ, or when an earlier rebuild is
// unfinished. A failure is logged and tried again at the next check; one
// that a stop (ctx done) caused is not logged.
func (p *Processor) checkIdle(ctx context.Context) {
	now := time.Now()
	if now.Sub(p.gen.lastCheck) < p.cfg.GenerationCheckEvery {
		return
	}
	p.gen.lastCheck = now
	// A rebuild that failed half-way adopted the new generation already:
	// only gen.rebuild remembers that it must be finished, so it is not
	// compared again.
	if !p.gen.rebuild {
		gen, err := p.store.EnsureGeneration(ctx)
		if err != nil {
			// A stop that cut the check short is no failure: the next
			// start compares the marker anyway.
			if ctx.Err() == nil {
				p.lg.Warn("idle generation check failed", zap.Error(err))
			}
			return
		}
		if gen == p.gen.adopted {
			return
		}
	}
	if _, err := p.recoverRedis(ctx); err != nil && ctx.Err() == nil {
		p.lg.Warn("rebuild after an idle generation check failed; trying again later", zap.Error(err))
	}
}

// finishRebuild completes a rebuild that an earlier attempt started but did
// not finish (recoverRedis failed after the store adopted the new
// generation), before batch b is applied.
func (p *Processor) finishRebuild(ctx context.Context, b *batch) error {
	if !p.gen.rebuild {
		return nil
	}
	b.forgetStored()
	rewound, err := p.recoverRedis(ctx)
	b.rewound = b.rewound || rewound
	return err
}
