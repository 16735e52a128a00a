package redisscript_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/redisscript"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
)

var (
	incr = redisscript.New("incr.lua", "return redis.call('INCRBY', KEYS[1], ARGV[1])\n")
	push = redisscript.New("push.lua", "redis.call('RPUSH', KEYS[1], ARGV[1])\nreturn redis.call('LLEN', KEYS[1])\n")
	boom = redisscript.New("boom.lua", "redis.call('INCR', KEYS[1])\nreturn redis.error_reply('ERR boom')\n")
)

// round queues n calls of incr and of push, interleaved, a plain INCR, and
// one call of boom, runs them, and checks every reply against round r (the
// r-th time every call took effect).
func round(t *testing.T, ctx context.Context, run *redisscript.Runner, c redis.UniversalClient, r int64) {
	t.Helper()
	const n = 8
	var incrs, pushes []*redis.Cmd
	var plain *redis.IntCmd
	var failing *redis.Cmd
	err := run.Pipelined(ctx, func(p *redisscript.Pipe) {
		for i := range n {
			incrs = append(incrs, p.Run(ctx, incr, []string{fmt.Sprintf("{k%d}:n", i)}, 1))
			pushes = append(pushes, p.Run(ctx, push, []string{fmt.Sprintf("{k%d}:l", i)}, r))
		}
		plain = p.Incr(ctx, "plain")
		failing = p.Run(ctx, boom, []string{"boom"})
	})
	if err != nil {
		t.Fatalf("round %d: %v", r, err)
	}
	for i := range n {
		if v, err := incrs[i].Int64(); err != nil || v != r {
			t.Errorf("round %d: incr %d = %d, %v; want %d", r, i, v, err, r)
		}
		if v, err := pushes[i].Int64(); err != nil || v != r {
			t.Errorf("round %d: push %d = %d, %v; want %d", r, i, v, err, r)
		}
		l, err := c.LRange(ctx, fmt.Sprintf("{k%d}:l", i), 0, -1).Result()
		if err != nil || len(l) != int(r) || l[r-1] != fmt.Sprint(r) {
			t.Errorf("round %d: list %d = %v, %v", r, i, l, err)
		}
	}
	if v, err := plain.Result(); err != nil || v != r {
		t.Errorf("round %d: plain INCR = %d, %v; want %d", r, v, err, r)
	}
	if err := failing.Err(); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("round %d: boom = %v, want its error", r, err)
	}
	if v, err := c.Get(ctx, "boom").Int64(); err != nil || v != r {
		t.Errorf("round %d: boom ran %d times, %v; want %d", r, v, err, r)
	}
}

// TestPipelinedNoScript runs pipelines against a Redis that has none of the
// scripts, then after each SCRIPT FLUSH, then with only some of them
// loaded: every call must take effect exactly once and answer as if the
// scripts had been there. A call that failed otherwise (boom) is not run
// again.
func TestPipelinedNoScript(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	run := redisscript.NewRunner(c, incr, push, boom)

	round(t, ctx, run, c, 1) // never loaded
	round(t, ctx, run, c, 2) // loaded by round 1
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	round(t, ctx, run, c, 3) // all flushed
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := redisscript.LoadAll(ctx, c, incr); err != nil {
		t.Fatal(err)
	}
	round(t, ctx, run, c, 4) // incr runs at once, push and boom after a reload
}

// TestPipelinedNoScriptCluster flushes the scripts of one master of a
// Redis Cluster: only the calls routed there are run again.
func TestPipelinedNoScriptCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	ctx := context.Background()
	cl := testenv.StartRedisCluster(t)
	c := cl.Client()
	run := redisscript.NewRunner(c, incr, push, boom)
	if err := run.Load(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ok, err := cl.Node(i).Client().ScriptExists(ctx, incr.SHA(), push.SHA(), boom.SHA()).Result()
		if err != nil || !ok[0] || !ok[1] || !ok[2] {
			t.Fatalf("master %d: scripts loaded %v, %v", i, ok, err)
		}
	}
	round(t, ctx, run, c, 1)
	node := cl.Node(1).Client() // follows no redirects
	there := 0
	for i := range 8 {
		if node.Get(ctx, fmt.Sprintf("{k%d}:n", i)).Err() == nil {
			there++
		}
	}
	if there == 0 || there == 8 {
		t.Fatalf("master 1 holds %d of the 8 counters; the test needs some", there)
	}
	if err := node.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	round(t, ctx, run, c, 2)
}

// TestLoadAllSyntaxError checks that a script Redis cannot compile fails
// LoadAll with its name.
func TestLoadAllSyntaxError(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	bad := redisscript.New("bad.lua", "return (\n")
	err := redisscript.LoadAll(ctx, c, incr, bad)
	if err == nil || !strings.Contains(err.Error(), "bad.lua") {
		t.Fatalf("LoadAll = %v, want an error naming bad.lua", err)
	}
}

// TestRunCheckReadsAfterRetried: a check (Pipe.RunCheck) that ran in the
// first round trip while other calls met NOSCRIPT is run again after them,
// so that its reply describes the data they wrote, not the data before.
// Without that, a marker read before the retried calls would vouch for a
// data set they did not run on. When no call is retried, the check's first
// reply stands.
func TestRunCheckReadsAfterRetried(t *testing.T) {
	ctx := context.Background()
	c := testenv.StartRedis(t).Client()
	length := redisscript.New("length.lua", "return redis.call('LLEN', KEYS[1])\n")
	run := redisscript.NewRunner(c, push, length)
	// Only the check is loaded: the push meets NOSCRIPT, the check does not.
	if err := redisscript.LoadAll(ctx, c, length); err != nil {
		t.Fatal(err)
	}
	pipeline := func() (pushed, checked int64) {
		var p1, chk *redis.Cmd
		err := run.Pipelined(ctx, func(p *redisscript.Pipe) {
			p1 = p.Run(ctx, push, []string{"l"}, "x")
			chk = p.RunCheck(ctx, length, []string{"l"})
		})
		if err != nil {
			t.Fatal(err)
		}
		pushed, err = p1.Int64()
		if err != nil {
			t.Fatal(err)
		}
		if checked, err = chk.Int64(); err != nil {
			t.Fatal(err)
		}
		return pushed, checked
	}
	if pushed, checked := pipeline(); pushed != 1 || checked != 1 {
		t.Fatalf("push retried after NOSCRIPT: pushed %d, check read %d; want 1 and 1 (read after the push)", pushed, checked)
	}
	if pushed, checked := pipeline(); pushed != 2 || checked != 2 {
		t.Fatalf("nothing retried: pushed %d, check read %d; want 2 and 2", pushed, checked)
	}
	if n := c.LLen(ctx, "l").Val(); n != 2 {
		t.Fatalf("list length %d: a call took effect twice or not at all", n)
	}
}
