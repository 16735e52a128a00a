package processor

import (
	"context"
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// failingGen is a Store whose generation marker cannot be read: the
// check's context's error, or errRedisDown while it is not done.
type failingGen struct{ Store }

var errRedisDown = errors.New("redis down")

func (failingGen) EnsureGeneration(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return "", errRedisDown
}

// TestCheckIdleQuietOnStop: an idle generation check that a stop cuts
// short logs no warning (a clean shutdown would otherwise print one),
// while one that fails for another reason still does.
func TestCheckIdleQuietOnStop(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	p := &Processor{store: failingGen{}, lg: zap.New(core)}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	p.checkIdle(stopped)
	if n := logs.Len(); n != 0 {
		t.Fatalf("a stopped check logged %d warnings: %v", n, logs.All()[0].Message)
	}
	p.gen.lastCheck = p.gen.lastCheck.AddDate(-1, 0, 0)
	p.checkIdle(context.Background())
	if got := logs.FilterMessage("idle generation check failed").Len(); got != 1 {
		t.Fatalf("a failed check logged %d warnings, want 1", got)
	}
}
