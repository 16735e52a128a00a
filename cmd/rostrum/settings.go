package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/hints"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
	"github.com/rostrumhq/rostrum/stability"
	"github.com/rostrumhq/rostrum/wal"
)

// The settings of the commands, one type per concern. Each registers its
// flags (a flag's name, group and the Config fields it sets are written
// once, there: cli.FlagSet), checks what no library Validate checks, with
// errors that name the flag, and sets its part of the libraries' Config.
// A command embeds the concerns it needs: `rostrum run` all of them
// (runFlags), `wal replay` those of the store (storeFlags), `boards prune`
// Redis and the boards (pruneFlags).

// logFlags are --log-format and --log-level, and the warnings found while
// parsing, which the logger logs first.
type logFlags struct {
	logFormat, logLevel string
	warnings            []string
}

func (f *logFlags) register(fs *cli.FlagSet) {
	fs.Group("ops").Tuning().StringVar(&f.logFormat, "log-format", "json", "log format: json or console")
	fs.Group("ops").StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
}

// logger is the logger of --log-format and --log-level, with the start-up
// warnings logged.
func (f *logFlags) logger(stderr io.Writer) (*zap.Logger, error) {
	return cli.NewLogger(stderr, f.logFormat, f.logLevel, f.warnings)
}

// scopeFlags say what one deployment serves: its environment (the topics
// {env}.callbacks.* and the Redis keys {env}:…), the topics' prefix and
// which rooms belong to the environment.
type scopeFlags struct {
	env, topicPrefix string
	routes           routeFlags
}

func (f *scopeFlags) register(fs *cli.FlagSet) {
	registerEnv(fs, "kafka", &f.env)
	registerTopicPrefix(fs, &f.topicPrefix)
	f.routes.register(fs)
}

// The Kafka flags that several commands share, each registered by one
// function, so that its name, default and meaning are written once.

// registerEnv registers --env into p, shown under the help group of the
// command's use of it (its topics, or only its Redis keys).
func registerEnv(fs *cli.FlagSet, group string, p *string) {
	fs.Group(group).Sets("Env").StringVar(p, "env", "prod", "environment served (prod, test, gray, demo, …): selects topics {env}.callbacks.* and Redis keys rostrum:{env}:…")
}

// registerTopicPrefix registers --topic-prefix into p.
func registerTopicPrefix(fs *cli.FlagSet, p *string) {
	fs.Group("kafka").Sets("TopicPrefix").StringVar(p, "topic-prefix", "", "prefix of every topic name")
}

// registerBrokers registers --brokers into p.
func registerBrokers(fs *cli.FlagSet, p *string) {
	fs.Group("kafka").Sets("Brokers").StringVar(p, "brokers", "127.0.0.1:9092", "Kafka seed brokers, comma-separated")
}

// registerCreateTopics registers --create-topics into p.
func registerCreateTopics(fs *cli.FlagSet, p *bool) {
	fs.Group("kafka").Sets("TopicSetup.Create").BoolVar(p, "create-topics", false, "create missing topics at start instead of failing")
}

// apply sets the scope in the processor's configuration.
func (f *scopeFlags) apply(pc *processor.Config) error {
	rooms, err := runRooms(&f.routes, f.env)
	if err != nil {
		return err
	}
	pc.Env, pc.TopicPrefix, pc.Rooms = f.env, f.topicPrefix, rooms
	return nil
}

// kafkaFlags are the consumer's: the brokers, the group, topic creation
// and the size of a poll. The security settings are cli.Security's.
type kafkaFlags struct {
	brokers, group string
	createTopics   bool
	maxPollRecords int
	pollTopUp      time.Duration
}

func (f *kafkaFlags) register(fs *cli.FlagSet) {
	registerBrokers(fs, &f.brokers)
	fs.Group("kafka").Tuning().Sets("Group.Name").StringVar(&f.group, "group", "", "Kafka consumer group (default rostrum-{env})")
	registerCreateTopics(fs, &f.createTopics)
	fs.Group("limits").Tuning().Sets("MaxPollRecords").IntVar(&f.maxPollRecords, "max-poll-records", 50000, "records per batch at most (large batches catch up on a backlog cheaply; a processor that keeps up polls small ones)")
	fs.Group("limits").Tuning().Sets("PollTopUp").DurationVar(&f.pollTopUp, "poll-top-up", 0, "after a poll that returned records, wait up to this long for those that arrived during the batch before and add them (an event waits about one batch less; pays where the host has spare cores, e.g. 2ms; 0: off)")
}

// apply sets the consumer's settings in the processor's configuration.
func (f *kafkaFlags) apply(pc *processor.Config) {
	pc.Brokers, pc.Group.Name = cli.SplitList(f.brokers), f.group
	pc.TopicSetup.Create, pc.MaxPollRecords, pc.PollTopUp = f.createTopics, f.maxPollRecords, f.pollTopUp
}

// redisFlags are where the rankings are kept (--redis; Sentinel and the
// security settings are cli.Security's) and how long an idle room stays.
type redisFlags struct {
	redis   string
	roomTTL time.Duration
}

func (f *redisFlags) register(fs *cli.FlagSet) {
	fs.Group("redis").StringVar(&f.redis, "redis", "127.0.0.1:6379", "Redis address; several comma-separated addresses mean a Redis Cluster; exclusive with --redis-sentinel-master")
	fs.Group("redis").Tuning().Sets("RebuildWindow", "RoomTTL").DurationVar(&f.roomTTL, "room-ttl", 24*time.Hour, "idle rooms expire from Redis after this long")
}

// check checks what no Validate checks; sentinel says whether Sentinel
// settings stand in for --redis.
func (f *redisFlags) check(sentinel bool) error {
	switch {
	case f.roomTTL < time.Minute:
		return fmt.Errorf("--room-ttl must be at least 1m, got %s", f.roomTTL)
	case f.redis == "" && !sentinel:
		return errors.New("--redis (or --redis-sentinel-master with --redis-sentinels) is required")
	}
	return nil
}

// walFlags are the write-ahead log's directory, fsync policy, segment size
// and retention.
type walFlags struct {
	walDir, walSync              string
	walMaxAge                    time.Duration
	walMaxBytes, walSegmentBytes int64
}

func (f *walFlags) register(fs *cli.FlagSet) {
	fs.Group("ops").StringVar(&f.walDir, "wal-dir", "./wal", "write-ahead log directory (one per processor instance)")
	fs.Group("ops").Tuning().StringVar(&f.walSync, "wal-sync", "always", "WAL fsync policy: always (fsync every batch) or none (leave it to the OS)")
	fs.Group("ops").Tuning().Sets("WALRetention.MaxAge").DurationVar(&f.walMaxAge, "wal-max-age", 24*time.Hour, "keep committed WAL batches this long")
	fs.Group("ops").Tuning().Sets("WALRetention.MaxBytes").Int64Var(&f.walMaxBytes, "wal-max-bytes", 1<<30, "keep at most this many WAL bytes of committed batches")
	fs.Group("ops").Tuning().Int64Var(&f.walSegmentBytes, "wal-segment-bytes", wal.DefaultSegmentBytes, "start a new WAL segment above this size; retention prunes whole segments, so this is also the step of the WAL's size")
}

// walConfig is the WAL's configuration.
func (f *walFlags) walConfig(lg *zap.Logger) (wal.Config, error) {
	o := wal.Config{SegmentBytes: f.walSegmentBytes, Logger: lg}
	var err error
	if f.walDir == "" {
		return o, errors.New("--wal-dir is required")
	}
	if o.Sync, err = wal.ParseSyncPolicy(f.walSync); err != nil {
		return o, fmt.Errorf("--wal-sync %v", err)
	}
	if f.walSegmentBytes < 1<<20 {
		return o, fmt.Errorf("--wal-segment-bytes must be at least 1048576 (1 MiB), got %d", f.walSegmentBytes)
	}
	return o, nil
}

// apply sets the WAL's retention, and the files kept beside the WAL, in the
// processor's configuration.
func (f *walFlags) apply(pc *processor.Config) {
	pc.WALRetention.MaxAge, pc.WALRetention.MaxBytes = f.walMaxAge, f.walMaxBytes
	pc.Group.MemberFile = filepath.Join(f.walDir, "group-member")
	// It says which Redis data set the WAL was applied to.
	pc.GenerationFile = filepath.Join(f.walDir, "redis-generation")
}

// rankingFlags are what is ranked and how the stable list follows it: the
// list's length, the ranking rules and the score's epoch, what happens to
// callbacks of other types, and the stability strategy.
type rankingFlags struct {
	topN                      int
	ranking, scoreEpoch       string
	unknownTypes              string
	stability                 string
	dwell, grace, dueInterval time.Duration
	margin                    int
}

func (f *rankingFlags) register(fs *cli.FlagSet) {
	fs.Group("ranking").Sets("TopN").IntVar(&f.topN, "top-n", 7, "length of the stable top list, 1..100")
	fs.Group("ranking").Sets("Meeting").StringVar(&f.ranking, "ranking", codec.DefaultRules().String(), "ranking rules: the fields to rank members on, most significant first, from spotlight, screen_share, audio, volume, video, role (the newest event time always comes last; a field left out is not ranked on)")
	fs.Group("ranking").Tuning().StringVar(&f.scoreEpoch, "score-epoch", codec.DefaultEpoch.Format(time.RFC3339), "epoch of the score's time field (RFC 3339); scores hold 2^38 ms ≈ 8.7 years after it")
	fs.Group("ranking").Tuning().Sets("UnknownTypes").StringVar(&f.unknownTypes, "unknown-types", processor.UnknownTypesSkip, "what to do with a well-formed callback of a type rostrum does not rank on: skip (count it in rostrum_events_ignored_total) or dlq")
	fs.Group("ranking").Sets("Stable.Strategy").StringVar(&f.stability, "stability", processor.StabilityHysteresis, "stable top list strategy: hysteresis (members change only when it lasts) or merge (the reference merge: sticky positions, membership follows the raw top-N); see docs/STABILITY.md")
	fs.Group("ranking").Tuning().Sets("Stable.Dwell").DurationVar(&f.dwell, "stability-dwell", stability.DefaultDwell, "hysteresis: how long a member must hold its place in the raw top-N before it replaces a shown one (0: at once)")
	fs.Group("ranking").Tuning().Sets("Stable.Grace").DurationVar(&f.grace, "stability-grace", stability.DefaultGrace, "hysteresis: how long a shown member out of the raw top-N stays (0: it goes at once)")
	fs.Group("ranking").Tuning().Sets("Stable.Margin").IntVar(&f.margin, "stability-margin", stability.DefaultMargin, "hysteresis: a member leading the weakest shown one out of the raw top-N by this many volume steps replaces it at once (0: off)")
	fs.Group("ranking").Tuning().Sets("Stable.DueInterval").DurationVar(&f.dueInterval, "stability-due-interval", 100*time.Millisecond, "hysteresis: how often to look for rooms whose dwell or grace ended without new events")
}

// meeting is the score layout of --ranking and --score-epoch.
func (f *rankingFlags) meeting() (*codec.Meeting, error) {
	epoch, err := time.Parse(time.RFC3339, f.scoreEpoch)
	if err != nil {
		return nil, fmt.Errorf("--score-epoch: %v", err)
	}
	rules, err := codec.ParseRules(f.ranking)
	if err != nil {
		return nil, fmt.Errorf("--ranking: %v", err)
	}
	meeting, err := codec.NewMeetingRules(epoch, rules)
	if err != nil {
		return nil, fmt.Errorf("--ranking: %v", err)
	}
	return meeting, nil
}

// apply sets the ranking in the processor's and the sink's configurations.
func (f *rankingFlags) apply(pc *processor.Config, so *sink.Config) error {
	meeting, err := f.meeting()
	if err != nil {
		return err
	}
	pc.TopN, pc.Meeting, pc.UnknownTypes = f.topN, meeting, f.unknownTypes
	pc.Stable.Strategy, pc.Stable.Dwell, pc.Stable.Grace, pc.Stable.Margin, pc.Stable.DueInterval = f.stability, f.dwell, f.grace, f.margin, f.dueInterval
	so.TopN, so.Meeting = f.topN, meeting
	return nil
}

// inputFlags bound what one record may hold and how far in the future an
// event may be.
type inputFlags struct {
	maxFutureSkew             time.Duration
	maxRecordBytes, maxEvents int
}

func (f *inputFlags) register(fs *cli.FlagSet) {
	fs.Group("ranking").Tuning().DurationVar(&f.maxFutureSkew, "max-future-skew", 5*time.Minute, "reject events whose ts is further than this in the future")
	fs.Group("limits").Tuning().IntVar(&f.maxRecordBytes, "max-record-bytes", 1<<20, "reject records larger than this")
	fs.Group("limits").Tuning().IntVar(&f.maxEvents, "max-events", 10000, "reject array records with more events than this")
}

// decode is the decoder's configuration.
func (f *inputFlags) decode() (codec.DecodeConfig, error) {
	switch {
	case f.maxFutureSkew < 0:
		return codec.DecodeConfig{}, errors.New("--max-future-skew must not be negative")
	case f.maxRecordBytes < 64:
		return codec.DecodeConfig{}, fmt.Errorf("--max-record-bytes must be at least 64, got %d", f.maxRecordBytes)
	case f.maxEvents < 1:
		return codec.DecodeConfig{}, fmt.Errorf("--max-events must be at least 1, got %d", f.maxEvents)
	}
	return codec.DecodeConfig{MaxRecordBytes: f.maxRecordBytes, MaxEvents: f.maxEvents, MaxFutureSkew: f.maxFutureSkew}, nil
}

// commonFlags are what every command that reads the config file takes:
// --config with its boards and hints, the log, and the security settings
// (each concern registers its part of them).
type commonFlags struct {
	logFlags
	config       string
	sec          cli.Security
	boards       []boarddef.Config // the config file's boards: list
	boardsSource string            // where boards came from, for errors
	hints        []hints.Rule      // the config file's hints: list (hints.go)
	fieldFlags   map[string]string
}

func (f *commonFlags) register(fs *cli.FlagSet) {
	f.logFlags.register(fs)
	fs.Group("ops").StringVar(&f.config, "config", "", "YAML config file; keys are these flag names")
}

// parse parses args, then fills unset flags from the environment and the
// config file, reads the file's boards, hints and (with routes) routes,
// and checks the security settings (reading their files). A key of the
// file that is not the command's but `rostrum run`'s is accepted (others
// lists them: one file serves every command of a deployment); any other
// key is an error.
func (f *commonFlags) parse(fs *cli.FlagSet, args []string, routes *routeFlags, others map[string]bool) error {
	cfg, warnings, err := parseSources(fs.FlagSet, args, &f.config, others)
	if err != nil {
		return err
	}
	if f.boards, err = readBoards(cfg); err != nil {
		return err
	}
	f.boardsSource = "--config " + cfg
	if f.hints, err = readHints(cfg); err != nil {
		return err
	}
	if routes != nil {
		if err := routes.read(cfg); err != nil {
			return err
		}
	}
	if err := f.sec.Resolve(); err != nil {
		return err
	}
	f.warnings = append(warnings, f.sec.Warnings...)
	f.fieldFlags = fs.FieldFlags()
	maps.Copy(f.fieldFlags, fileFieldNames)
	return nil
}

// runKeys are the keys of run's config file, which the commands that take
// fewer settings than run accept and leave unused.
func runKeys() map[string]bool {
	fs := cli.NewFlagSet("run", flag.ContinueOnError)
	new(runFlags).register(fs)
	keys := map[string]bool{boardsKey: true, hintsKey: true, routesKey: true}
	fs.VisitAll(func(f *flag.Flag) { keys[f.Name] = true })
	return keys
}

// storeFlags are the settings of the rankings' store, Kafka apart: what
// `rostrum wal replay` takes to re-apply a WAL as the processor would.
type storeFlags struct {
	commonFlags
	scopeFlags
	redisFlags
	walFlags
	rankingFlags
	inputFlags
	store storeLimitFlags // limits.go
}

func (f *storeFlags) register(fs *cli.FlagSet) {
	f.commonFlags.register(fs)
	f.scopeFlags.register(fs)
	f.redisFlags.register(fs)
	f.sec.RegisterRedis(fs)
	f.walFlags.register(fs)
	f.rankingFlags.register(fs)
	f.inputFlags.register(fs)
	f.store.register(fs)
}

// storeConfig builds the sink's and the WAL's configurations, and the
// processor's but for the consumer and the batch (runFlags.runConfig adds
// those), with the boards compiled. The flags that no Validate checks are
// checked here; the caller validates the rest (validate).
func (f *storeFlags) storeConfig(lg *zap.Logger) (pc processor.Config, so sink.Config, wo wal.Config, err error) {
	so = sink.Config{RoomTTL: f.roomTTL, Env: f.env, Logger: lg}
	pc = processor.Config{RebuildWindow: f.roomTTL, Logger: lg}
	if err = f.rankingFlags.apply(&pc, &so); err != nil {
		return
	}
	if wo, err = f.walFlags.walConfig(lg); err != nil {
		return
	}
	if pc.Decode, err = f.inputFlags.decode(); err != nil {
		return
	}
	if err = f.redisFlags.check(f.sec.Sentinel.On()); err != nil {
		return
	}
	if err = f.scopeFlags.apply(&pc); err != nil {
		return
	}
	f.walFlags.apply(&pc)
	f.store.apply(&pc, &so)
	// Set after Validate: the board store needs the Redis client that the
	// command opens.
	pc.Boards, err = compileBoards(f.boards, f.boardsSource)
	return
}

// validate validates the sink's configuration (the processor's is
// validated where it is complete), its errors naming the flags.
func (f *storeFlags) validate(so sink.Config) error {
	return config.Rename(so.Validate(), f.fieldFlags)
}

// openRedis connects to Redis and checks that it answers; the caller
// closes the client.
func (f *commonFlags) openRedis(ctx context.Context, addr string) (redis.UniversalClient, error) {
	ro, err := f.sec.RedisOptions(addr)
	if err != nil {
		return nil, err
	}
	rc := redis.NewUniversalClient(ro)
	if err := rc.Ping(ctx).Err(); err != nil {
		rc.Close()
		return nil, f.sec.RedisError(addr, err)
	}
	return rc, nil
}
