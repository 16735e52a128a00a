// Package redisscript runs rostrum's Lua scripts in Redis: it reads each
// script from its embedded .lua file, loads scripts into every master, and
// runs pipelines of script calls that survive a Redis that lost its script
// cache (a restart, a failover, SCRIPT FLUSH).
//
// # Script files
//
// A script is one .lua file whose header comment states its contract: KEYS,
// ARGV and the reply. A line of the form
//
//	--! include score.lua
//
// is replaced by the named file of the same directory, so that shared Lua
// functions live in one file of their own; an included file includes
// nothing. What Redis runs, and what its SHA-1 names, is the file after that
// step (Script.Source).
//
// # NOSCRIPT
//
// A call answered NOSCRIPT did not run: Redis found no script with that
// SHA-1 and changed nothing. Runner.Pipelined therefore loads the scripts
// and runs again, in a second round trip, only the calls that failed so; the
// others' results stand, so no call takes effect twice. A retried call runs
// after every other command of its pipeline. A call queued with
// Pipe.RunCheck only reads (a marker vouching for the data set, such as the
// sink's generation marker); it is run again, last, whenever another call
// is, so that what it read is never older than what the retried calls did.
//
// The package imports go-redis and the standard library only.
package redisscript
