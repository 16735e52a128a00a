package ranking

import "errors"

// ErrRedisReset is returned by an apply when Redis lost the data it is
// asked to change: the environment's generation marker (meetings) or a
// board's generation differs from the one the writer adopted (a restart
// without persistence, a failover to an empty replica, FLUSHALL), or
// another processor already noticed and rebuilt. The caller rebuilds what
// its own write-ahead log holds, then adopts the new generation. The apply
// that returned it ran fully; its effects are kept. Errors that name the
// cause (a rollback, which board) wrap it.
var ErrRedisReset = errors.New("redis lost its data (generation changed)")
