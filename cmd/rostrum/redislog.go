package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
)

// zapRedisLogger routes go-redis's internal messages (pool dial failures,
// reconnects) to the zap logger instead of the standard log package.
type zapRedisLogger struct{ lg *zap.Logger }

func (l zapRedisLogger) Printf(_ context.Context, format string, v ...any) {
	l.lg.Debug("redis client", zap.String("msg", fmt.Sprintf(format, v...)))
}

func setRedisLogger(lg *zap.Logger) { redis.SetLogger(zapRedisLogger{lg}) }
