package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/control"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/web"
)

// The exit codes of `rostrum check`, one per class of failure, in the order
// the checks run. When several classes fail, the first one's code is the
// exit status. docs/operations.md ("Preflight: rostrum check") lists them.
const (
	exitUsage   = 1 // an unexpected error (also of every other command)
	exitConfig  = 2 // flags, config file, boards or security settings invalid
	exitKafka   = 3 // no broker reachable, or the credentials refused
	exitTopics  = 4 // a topic missing or unreadable, or the output not compacted
	exitGroup   = 5 // the consumer group cannot be described (e.g. an ACL)
	exitRedis   = 6 // Redis unreachable, or the credentials refused
	exitScripts = 7 // the Lua scripts cannot be loaded (SCRIPT LOAD refused)
)

// exitError is an error with the exit status main should end with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// checker prints one line per check and remembers the first failed class.
type checker struct {
	out    io.Writer
	failed int // exit code of the first failed class; 0: none
}

func (c *checker) ok(what, format string, args ...any) {
	fmt.Fprintf(c.out, "ok    %s: %s\n", what, fmt.Sprintf(format, args...))
}

func (c *checker) fail(code int, what string, err error) {
	fmt.Fprintf(c.out, "FAIL  %s: %v\n", what, err)
	if c.failed == 0 {
		c.failed = code
	}
}

func (c *checker) skip(what, why string) {
	fmt.Fprintf(c.out, "skip  %s: %s\n", what, why)
}

// checkFlags are the flags of `rostrum check` beside run's.
type checkFlags struct {
	offline bool // default: false
}

func (f *checkFlags) register(fs *cli.FlagSet) {
	fs.Group("command").BoolVar(&f.offline, "offline", false, "check the flags, the config file and the files they name (tokens, certificates, passwords) without connecting to Kafka or Redis")
}

// checkOffline checks what runProcessor checks before it connects, beyond
// pipelineConfig: the HTTP guards, the token files, the certificate pair,
// the control API's options and the Redis client's.
func checkOffline(f *runFlags) error {
	var guard web.Config
	if err := f.apiGuard.apply(&guard); err != nil {
		return err
	}
	if err := f.streams.apply(&guard); err != nil {
		return err
	}
	if _, err := f.boardAdmin.tokens(); err != nil {
		return err
	}
	if _, err := f.control.tokens(); err != nil {
		return err
	}
	if _, err := f.httpTLS.load(); err != nil {
		return err
	}
	o := f.control.options(control.TopicsFor(f.topicPrefix, f.env), f.env, f.roomTTL, nil)
	if err := o.Validate(); err != nil {
		return err
	}
	_, err := f.sec.RedisOptions(f.redis)
	return err
}

// cmdCheck verifies, without consuming, everything `rostrum run` with the
// same flags needs: the configuration, the brokers (with the configured
// security), every topic with its partitions and the output's compaction,
// the consumer group, Redis, and that the Lua scripts load. With
// --create-topics it first creates the missing topics, as run would; with
// --offline it checks the configuration only and connects to nothing.
func cmdCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.register(fs)
	var cf checkFlags
	cf.register(fs)
	c := &checker{out: stdout}
	if err := parseFlags(fs, &f, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		c.fail(exitConfig, "config", err)
		return &exitError{exitConfig, errors.New("configuration invalid")}
	}
	lg, err := f.logger(stderr)
	if err != nil {
		c.fail(exitConfig, "config", err)
		return &exitError{exitConfig, errors.New("configuration invalid")}
	}
	setRedisLogger(lg)
	pc, so, _, err := f.pipelineConfig(lg)
	if err != nil {
		c.fail(exitConfig, "config", cli.ScrubError(err, f.sec.Secrets()...))
		return &exitError{exitConfig, errors.New("configuration invalid")}
	}
	if cf.offline {
		if err := checkOffline(&f); err != nil {
			c.fail(exitConfig, "config", cli.ScrubError(err, f.sec.Secrets()...))
			return &exitError{exitConfig, errors.New("configuration invalid")}
		}
	}
	c.ok("config", "env %s, group %s, %d boards", pc.Env, groupOf(pc), len(pc.Boards))
	if cf.offline {
		c.skip("kafka", "--offline")
		c.skip("redis", "--offline")
		return nil
	}

	checkKafka(ctx, c, &f, pc)
	checkRedis(ctx, c, &f, pc, so)
	if c.failed != 0 {
		return &exitError{c.failed, fmt.Errorf("check failed (exit status %d)", c.failed)}
	}
	return nil
}

func groupOf(pc processor.Config) string {
	if pc.Group.Name != "" {
		return pc.Group.Name
	}
	return "rostrum-" + pc.Env
}

func checkKafka(ctx context.Context, c *checker, f *runFlags, pc processor.Config) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(pc.Brokers...)}, pc.KafkaOpts...)...)
	if err != nil {
		c.fail(exitKafka, "kafka brokers", err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()

	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		c.fail(exitKafka, "kafka brokers", cli.ScrubError(f.sec.KafkaError(err), f.sec.Secrets()...))
		c.skip("topics", "no broker answered")
		c.skip("consumer group", "no broker answered")
		return
	}
	var addrs []string
	for _, b := range md.Brokers {
		addrs = append(addrs, fmt.Sprintf("%s:%d", b.Host, b.Port))
	}
	c.ok("kafka brokers", "%d answered (%s), cluster %s, %s", len(md.Brokers), strings.Join(addrs, ", "), md.Cluster, f.sec.KafkaDescription())

	specs := pc.TopicSpecs()
	if pc.TopicSetup.Create {
		// The topic-creation Job of deployments/k8s: create what is
		// missing from the specifications, then verify as always.
		created, err := processor.CreateTopics(ctx, adm, specs, pc.TopicSetup.ReplicationFactor)
		if err != nil {
			c.fail(exitTopics, "create topics", err)
		} else {
			c.ok("create topics", "%d created %v", len(created), created)
		}
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	states, err := processor.DescribeTopics(ctx, adm, names...)
	if err != nil {
		c.fail(exitTopics, "topics", err)
	}
	for i, st := range states {
		what := "topic " + st.Name
		switch {
		case st.Err != nil:
			c.fail(exitTopics, what, st.Err)
		case !st.Exists:
			c.fail(exitTopics, what, errors.New("missing (create it, or start rostrum run once with --create-topics)"))
		case specs[i].Role == processor.RoleOutput && !st.Compacted():
			if f.ops.allowUncompactedOutput {
				c.ok(what, "%d partitions, cleanup.policy=%s (allowed by --allow-uncompacted-output)", st.Partitions, st.Configs["cleanup.policy"])
				continue
			}
			c.fail(exitTopics, what, fmt.Errorf("%d partitions, cleanup.policy=%s; the output must be compacted (cleanup.policy=compact)", st.Partitions, st.Configs["cleanup.policy"]))
		default:
			c.ok(what, "%d partitions, cleanup.policy=%s, retention.ms=%s", st.Partitions, st.Configs["cleanup.policy"], st.Configs["retention.ms"])
		}
	}

	group := groupOf(pc)
	groups, err := adm.DescribeGroups(ctx, group)
	if err == nil {
		if g, ok := groups[group]; ok && g.Err != nil {
			err = g.Err
		}
	}
	switch g := groups[group]; {
	case errors.Is(err, kerr.GroupIDNotFound):
		c.ok("consumer group "+group, "does not exist yet (created when the first processor joins)")
	case err != nil:
		c.fail(exitGroup, "consumer group "+group, err)
	case g.State == "Dead":
		c.ok("consumer group "+group, "does not exist yet (created when the first processor joins)")
	default:
		c.ok("consumer group "+group, "%s, %d members", g.State, len(g.Members))
	}
}

func checkRedis(ctx context.Context, c *checker, f *runFlags, pc processor.Config, so sink.Config) {
	what := "redis " + f.sec.Sentinel.Target(f.redis)
	ro, err := f.sec.RedisOptions(f.redis)
	if err != nil {
		c.fail(exitRedis, what, err)
		return
	}
	if f.sec.Sentinel.On() && !checkSentinels(ctx, c, f, ro) {
		c.skip(what, "no Sentinel named the master")
		c.skip("redis scripts", "redis did not answer")
		return
	}
	rc := redis.NewUniversalClient(ro)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	store, err := sink.New(rc, so)
	if err != nil {
		c.fail(exitRedis, what, err)
		return
	}
	if err := store.Ping(ctx); err != nil {
		c.fail(exitRedis, what, cli.ScrubError(f.sec.RedisError(f.redis, err), f.sec.Secrets()...))
		c.skip("redis scripts", "redis did not answer")
		return
	}
	c.ok(what, "answered, %s", f.sec.RedisDescription())
	if err := loadScripts(ctx, rc, store, pc); err != nil {
		c.fail(exitScripts, "redis scripts", fmt.Errorf("%w (the Redis user needs SCRIPT LOAD and EVALSHA)", err))
		return
	}
	loaded := "the ranking scripts"
	if len(pc.Boards) > 0 {
		loaded += " and the board scripts"
	}
	c.ok("redis scripts", "%s loaded", loaded)
}

// loadScripts loads the sink's scripts and, with boards, the boards' into
// Redis: a Redis user whose ACL forbids them fails here, at start, rather
// than at the first batch.
func loadScripts(ctx context.Context, rc redis.UniversalClient, store *sink.Store, pc processor.Config) error {
	if err := store.LoadScripts(ctx); err != nil {
		return err
	}
	if len(pc.Boards) > 0 {
		return board.NewStore(rc, pc.Env, pc.Boards).LoadScripts(ctx)
	}
	return nil
}
