package redisscript

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Runner runs pipelines of script calls through one client. It is safe for
// concurrent use.
type Runner struct {
	c       redis.UniversalClient
	scripts []*Script
}

// NewRunner returns a runner for calls of scripts through c (a single node,
// failover or cluster client). scripts are those it loads when Redis
// answers NOSCRIPT: every script its callers run.
func NewRunner(c redis.UniversalClient, scripts ...*Script) *Runner {
	return &Runner{c: c, scripts: scripts}
}

// Load loads the runner's scripts into every master (see LoadAll).
func (r *Runner) Load(ctx context.Context) error { return LoadAll(ctx, r.c, r.scripts...) }

// Pipe is a pipeline being filled for Runner.Pipelined. Its embedded
// Pipeliner queues any other command; script calls go through Run, so that
// the runner can retry them.
type Pipe struct {
	redis.Pipeliner
	calls []call
}

// call is one queued script call.
type call struct {
	s    *Script
	keys []string
	args []any
	cmd  *redis.Cmd
	// check: a call that only reads (Pipe.RunCheck), run again whenever
	// another call of its pipeline is
	check bool
}

// Run queues a call of s (EVALSHA) and returns its command, which holds the
// reply once Pipelined returns.
func (p *Pipe) Run(ctx context.Context, s *Script, keys []string, args ...any) *redis.Cmd {
	cmd := evalSha(ctx, p.Pipeliner, s, keys, args)
	p.calls = append(p.calls, call{s: s, keys: keys, args: args, cmd: cmd})
	return cmd
}

// RunCheck queues a call of s, as Run, that only reads (a marker that
// vouches for the data set the other calls wrote to): whenever Pipelined
// runs other calls of the pipeline again after NOSCRIPT, it runs this one
// again too, after them, so that its reply is never older than theirs.
// Queued after the calls it vouches for, its reply describes the data set
// they all ran on, or a later one.
func (p *Pipe) RunCheck(ctx context.Context, s *Script, keys []string, args ...any) *redis.Cmd {
	cmd := p.Run(ctx, s, keys, args...)
	p.calls[len(p.calls)-1].check = true
	return cmd
}

// Pipelined runs the commands fill queues on p in one round trip. The
// script calls that fail with NOSCRIPT did not run; Pipelined then loads the
// runner's scripts and runs those calls again, in their order, in a second
// round trip, and their commands hold the second replies. Calls that failed
// otherwise, or succeeded, are not run again, so every call takes effect at
// most once. A call that meets NOSCRIPT twice keeps that error. A call
// queued with RunCheck is run again whenever another call is, after them.
//
// Pipelined returns an error only when the scripts could not be loaded; each
// command's own error tells how it went.
func (r *Runner) Pipelined(ctx context.Context, fill func(p *Pipe)) error {
	p := &Pipe{Pipeliner: r.c.Pipeline()}
	fill(p)
	// Exec reports only the first error; each command's own error decides.
	_, _ = p.Exec(ctx)
	var failed []call
	for _, c := range p.calls {
		if isNoScript(c.cmd.Err()) {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// The checks that did run in the first round trip read the data set as
	// it was before the calls run again: read it once more, after them.
	for _, c := range p.calls {
		if c.check && !isNoScript(c.cmd.Err()) {
			failed = append(failed, c)
		}
	}
	if err := r.Load(ctx); err != nil {
		return err
	}
	again := r.c.Pipeline()
	cmds := make([]*redis.Cmd, len(failed))
	for i, c := range failed {
		cmds[i] = evalSha(ctx, again, c.s, c.keys, c.args)
	}
	_, _ = again.Exec(ctx)
	for i, c := range failed {
		c.cmd.SetVal(cmds[i].Val())
		c.cmd.SetErr(cmds[i].Err())
	}
	return nil
}

// Run runs one call of s, with the same NOSCRIPT policy as Pipelined.
func (r *Runner) Run(ctx context.Context, s *Script, keys []string, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	if err := r.Pipelined(ctx, func(p *Pipe) { cmd = p.Run(ctx, s, keys, args...) }); err != nil && cmd.Err() == nil {
		cmd.SetErr(err)
	}
	return cmd
}

// isNoScript reports whether err is Redis's NOSCRIPT: no script has the
// SHA-1 called, and nothing ran.
func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// evalSha queues EVALSHA of s on p as go-redis's EvalSha does (the first
// key at position 3, for Redis Cluster routing), but with the SHA-1 and the
// keys boxed as pointers, which go-redis writes like the strings they point
// to: a call then allocates its argument slice and its command, not one
// interface value per key as well. keys must not change until the reply.
func evalSha(ctx context.Context, p redis.Pipeliner, s *Script, keys []string, args []any) *redis.Cmd {
	a := make([]any, 3+len(keys), 3+len(keys)+len(args))
	a[0], a[1], a[2] = "evalsha", &s.sha, len(keys)
	for i := range keys {
		a[3+i] = &keys[i]
	}
	a = append(a, args...)
	cmd := redis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = p.Process(ctx, cmd)
	return cmd
}
