package processor

import (
	"time"

	"go.uber.org/zap"
)

// maybePrune removes WAL segments holding only committed batches once per
// Config.WALRetention.PruneEvery, bounded by its MaxAge and MaxBytes.
func (p *Processor) maybePrune() {
	if p.wal == nil || p.commits.walSeq == 0 || time.Since(p.commits.lastPrune) < p.cfg.WALRetention.PruneEvery {
		return
	}
	p.commits.lastPrune = time.Now()
	n, err := p.wal.Prune(p.commits.walSeq+1, p.cfg.WALRetention.MaxAge, p.cfg.WALRetention.MaxBytes)
	if err != nil {
		p.lg.Warn("wal prune failed", zap.Error(err))
	} else if n > 0 {
		p.lg.Info("wal pruned", zap.Int("segments", n))
	}
}
