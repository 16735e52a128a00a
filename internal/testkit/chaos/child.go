package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// Environment variables of a child processor process.
const (
	childEnv   = "ROSTRUM_CHAOS_CHILD"
	brokersEnv = "ROSTRUM_CHAOS_BROKERS"
	redisEnv   = "ROSTRUM_CHAOS_REDIS"
	walEnv     = "ROSTRUM_CHAOS_WAL"
	stableEnv  = "ROSTRUM_CHAOS_STABILITY"
	// pipelineEnv "1": the batch pipeline on, no boards (Harness.Pipeline)
	pipelineEnv = "ROSTRUM_CHAOS_PIPELINE"
)

// exitAbandoned is a child's exit status when it was stopped (SIGTERM)
// while its batch was failing.
const exitAbandoned = 3

// GenerationFile is the name of the file, in a WAL directory, where a child
// processor keeps the Redis generation its WAL was applied to.
const GenerationFile = "redis-generation"

// MaybeRunChild runs a processor and exits when the test binary was started
// as a child by Env.Start. Call it first in TestMain.
func MaybeRunChild() {
	if os.Getenv(childEnv) == "1" {
		os.Exit(runChild())
	}
}

// ProcessorConfig is the configuration every chaos processor runs with,
// except its boards (Boards), which need a Redis client for their store:
// `rostrum run`'s defaults with the stable strategy stable
// (processor.StabilityHysteresis, with run's dwell, grace, margin and due
// interval, or processor.StabilityMerge). What differs is test tuning: 500
// records per poll (so that a short trace makes many batches), the
// generation check every second instead of 5 s, a minute of future skew,
// and the group's fast session timeouts (testenv.FastGroupOpts).
func ProcessorConfig(brokers []string, walDir string, lg *zap.Logger, stable string) processor.Config {
	cfg := processor.Config{
		Brokers: brokers, Env: EnvName, MaxPollRecords: 500,
		Decode:               codec.DecodeConfig{MaxFutureSkew: time.Minute},
		GenerationFile:       filepath.Join(walDir, GenerationFile),
		GenerationCheckEvery: time.Second,
		Logger:               lg,
		KafkaOpts:            testenv.FastGroupOpts(),
		Stable:               processor.StableConfig{Strategy: stable},
	}
	if stable == processor.StabilityHysteresis {
		cfg.Stable.Dwell, cfg.Stable.Grace, cfg.Stable.Margin = stability.DefaultDwell, stability.DefaultGrace, stability.DefaultMargin
		cfg.Stable.DueInterval = 100 * time.Millisecond
	}
	return cfg
}

// SinkOptions are the sink's options of every chaos processor: `rostrum
// run`'s state cache and members cap.
func SinkOptions() sink.Config {
	return sink.Config{Env: EnvName, CacheMembers: sink.DefaultCacheMembers, MaxMembers: 100000}
}

// RedisClient returns a client for addrs: one address is a single node,
// several are the seeds of a Redis Cluster.
func RedisClient(addrs []string) redis.UniversalClient {
	if len(addrs) > 1 {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: 200 * time.Millisecond})
	}
	return redis.NewClient(&redis.Options{Addr: addrs[0]})
}

func runChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	lg, _ := zap.NewProduction()
	walDir := os.Getenv(walEnv)
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	track, err := newInflight(walDir)
	if err != nil {
		return fail(err)
	}
	rc := RedisClient(strings.Split(os.Getenv(redisEnv), ","))
	defer rc.Close()
	rc.AddHook(redisHook{track})
	store, err := sink.New(rc, SinkOptions())
	if err != nil {
		return fail(err)
	}
	log, err := wal.Open(walDir, wal.Config{Logger: lg})
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	cfg := ProcessorConfig(strings.Split(os.Getenv(brokersEnv), ","), walDir, lg, os.Getenv(stableEnv))
	cfg.Observer = batchObserver{processor.NopObserver{}, track}
	if os.Getenv(pipelineEnv) == "1" {
		cfg.PipelineBatches = true
	} else {
		if cfg.Boards, err = Boards(); err != nil {
			return fail(err)
		}
		cfg.BoardStore = board.NewStore(rc, EnvName, cfg.Boards)
	}
	p, err := processor.New(ctx, cfg, store, trackedLog{log, track})
	if err != nil {
		return fail(err)
	}
	fmt.Println("ready") // the signal handler is installed
	if cfg.PipelineBatches {
		go logOverlap(ctx, p, lg)
	}
	if err := p.Run(ctx); err != nil {
		if ctx.Err() != nil {
			// Stopped while its batch was failing (Redis wiped again and
			// again, say): Run abandons the batch, uncommitted, and says
			// so (processor.Run); the harness counts it (Harness.Abandoned).
			fmt.Fprintln(os.Stderr, "child: stopped:", err)
			return exitAbandoned
		}
		return fail(err)
	}
	s := p.Stats()
	lg.Info("child stopped", zap.Int64("records", s.Records.Load()), zap.Int64("retries", s.Retries.Load()),
		zap.Int64("redis_resets", s.RedisResets.Load()), zap.Int64("due_steps", s.DueSteps.Load()))
	return 0
}

// OverlapLog is the message a child with the batch pipeline logs once, at
// its first batch prepared while the one before was in stage 2
// (processor.Stats.Overlapped): the pipeline schedule requires it.
const OverlapLog = "batches overlapped"

// logOverlap logs OverlapLog once p overlapped a batch.
func logOverlap(ctx context.Context, p *processor.Processor, lg *zap.Logger) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n := p.Stats().Overlapped.Load(); n > 0 {
				lg.Info(OverlapLog, zap.Int64("batches", n))
				return
			}
		}
	}
}

// Proc is a processor running as a child process.
type Proc struct {
	Slot   int
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool
}

// startProc starts the test binary as a processor on walDir, its stderr
// appended to logPath, and waits until it is ready; pipeline: with the
// batch pipeline on and no boards.
func startProc(slot int, brokers, redisAddrs []string, walDir, logPath, stable string, pipeline bool) (*Proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1",
		brokersEnv+"="+strings.Join(brokers, ","),
		redisEnv+"="+strings.Join(redisAddrs, ","),
		walEnv+"="+walDir,
		stableEnv+"="+stable)
	if pipeline {
		cmd.Env = append(cmd.Env, pipelineEnv+"=1")
	}
	cmd.Stderr = logf
	dieWithParent(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Slot: slot, cmd: cmd, exited: make(chan struct{})}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err != nil || line != "ready\n" {
		p.Kill()
		return nil, fmt.Errorf("processor in slot %d did not start (%q, %v); see %s", slot, line, err, logPath)
	}
	return p, nil
}

// Kill ends the process with SIGKILL and waits for it.
func (p *Proc) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// Stop sends SIGTERM (a clean leave) and waits up to 30 s; it reports
// whether the process exited cleanly (errAbandoned: it abandoned a failing
// batch, uncommitted, as processor.Run documents), killing it otherwise.
func (p *Proc) Stop() error {
	// SIGTERM first: a paused process (Schedule reads its state while it is
	// stopped) handles it as soon as it continues, in the state just read.
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	p.Resume()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.Kill()
		return fmt.Errorf("processor in slot %d did not stop within 30s", p.Slot)
	}
	switch code := p.cmd.ProcessState.ExitCode(); code {
	case 0:
	case exitAbandoned:
		return errAbandoned
	default:
		return fmt.Errorf("processor in slot %d exited with %v", p.Slot, p.cmd.ProcessState)
	}
	return nil
}

// errAbandoned says a stopped processor abandoned a failing batch, as
// processor.Run documents.
var errAbandoned = errors.New("stopped with a failing batch")

// Pause stops the process with SIGSTOP: it keeps its connections but does
// nothing, as a processor stalled by a long GC pause or a frozen VM would.
func (p *Proc) Pause() {
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	p.paused = true
}

// Resume continues a paused process.
func (p *Proc) Resume() {
	if p.paused {
		_ = p.cmd.Process.Signal(syscall.SIGCONT)
		p.paused = false
	}
}
