package processor

import (
	"time"

	"go.uber.org/zap"
)

// maybePrune removes WAL segments holding only committed batches once per
// WALPruneEvery, bounded by WALMaxAge and WALMaxBytes.
func (p *Processor) maybePrune() {
	if p.wal == nil || p.commits.walSeq == 0 || time.Since(p.commits.lastPrune) < p.cfg.WALPruneEvery {
		return
	}
	p.commits.lastPrune = time.Now()
	n, err := p.wal.Prune(p.commits.walSeq+1, p.cfg.WALMaxAge, p.cfg.WALMaxBytes)
	if err != nil {
		p.lg.Warn("wal prune failed", zap.Error(err))
	} else if n > 0 {
		p.lg.Info("wal pruned", zap.Int("segments", n))
	}
}
