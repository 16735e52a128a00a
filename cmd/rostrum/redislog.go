package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// zapRedisLogger routes go-redis's internal messages (pool dial failures,
// reconnects) to the zap logger instead of the standard log package, at
// debug level; a Sentinel-managed master's switch ("sentinel: new master")
// is logged at info, since an operator wants to see each failover.
type zapRedisLogger struct{ lg *zap.Logger }

func (l zapRedisLogger) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "sentinel: new master") {
		l.lg.Info("redis client", zap.String("msg", msg))
		return
	}
	l.lg.Debug("redis client", zap.String("msg", msg))
}

func setRedisLogger(lg *zap.Logger) { redis.SetLogger(zapRedisLogger{lg}) }
