package processor

import (
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/board/boarddef"
	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/config"
	"github.com/rostrumhq/rostrum/route"
)

// Config configures a Processor. A zero value takes the default noted,
// except for the settings that can be turned off (Dwell, Grace, Margin),
// where zero means off, as on the command line; `rostrum run`'s defaults
// for those are stability.DefaultDwell, DefaultGrace and DefaultMargin.
type Config struct {
	Brokers     []string // Kafka seed brokers; required
	Env         string   // environment served, e.g. prod; required
	TopicPrefix string   // prepended to every topic name; default none
	TopN        int      // stable list length; default 7, at most 100

	Group      GroupConfig  // the consumer group: its name, static membership, timeouts
	TopicSetup TopicSetup   // how Create creates topics, and what the start-up check accepts
	Stable     StableConfig // the stable strategy and its timing
	// WALRetention is how long committed WAL batches are kept, and how
	// often the WAL is pruned.
	WALRetention WALRetention
	Retry        RetryConfig // retries of a failed batch, and when they make Ready report not ready

	// Rooms, when set, says which rooms belong to this environment: those it
	// routes to Env (the same table the gateway routes with, so the two
	// never disagree). An event of another room goes to the DLQ. nil:
	// every room.
	Rooms *route.Table

	// MaxPollRecords is the most records one poll takes: a large batch
	// touches each room once for many events, so catching up on a backlog
	// is cheapest in large batches, while a processor that keeps up polls
	// small ones. Default 50000.
	MaxPollRecords int
	// PollTopUp, when positive, is how long a poll that returned records
	// waits for more: Kafka's client buffers one fetch and fetches again
	// only when a poll has drained it, so the records a poll returns are
	// those that had arrived when the batch before began, and the ones
	// that arrived during that batch wait for the next. A second poll,
	// waiting at most PollTopUp for the fetch the first one started, adds
	// them to this batch: an event then waits about one batch time less.
	// It runs after a batch that took at least 4 × PollTopUp (after a
	// shorter one few records wait), and only pays where the client and
	// broker have a spare core to answer that fetch at once. 0 (the
	// default): one poll per batch.
	PollTopUp time.Duration
	// MaxBatchBytes caps the keys and values of one batch; a larger poll is
	// processed as several batches. Default 64 MiB, at most 192 MiB (a WAL
	// frame holds 256 MiB).
	MaxBatchBytes int

	Decode  codec.DecodeConfig
	Meeting *codec.Meeting // score layout and ranking rules; default codec.NewMeeting(codec.DefaultEpoch) (the default rules)
	// UnknownTypes says what happens to a well-formed event of a type
	// rostrum does not know: UnknownTypesSkip (default) skips it and counts
	// it (Observer.Ignored; rostrum_events_ignored_total), the record's
	// other events are applied; UnknownTypesDLQ sends the whole record to
	// the DLQ, as before ranking rules. It sets Decode.IgnoreUnknownTypes.
	UnknownTypes string

	// ShutdownTimeout bounds the stop once Run's context is cancelled: the
	// batch in flight is finished (and committed) or abandoned (left
	// uncommitted, the group redelivers it), and the group is left, all
	// within this time, whatever Redis, the group or the broker does.
	// Default 10s.
	ShutdownTimeout time.Duration
	// AckDelay is how long the acknowledgement of a published output may
	// wait to ride in the room's next apply script, where it costs nothing,
	// before it is sent on its own (acks.go). Default 1s; negative: every
	// acknowledgement goes with the next batch. An output whose
	// acknowledgement was still waiting when the processor crashed or lost
	// the room's partition is published again, with its seq and identical
	// content.
	AckDelay time.Duration
	// PipelineBatches turns the batch pipeline on (pipeline.go): the next
	// batch is polled, decoded and appended to the WAL while the current
	// one is in Redis. Default false: each batch is polled only after the
	// one before it was committed. Off by default until it measures better
	// (docs/PERFORMANCE.md); without effect when boards are configured.
	PipelineBatches bool
	// MaxRoomsPerApply is the most rooms written in one pipelined Redis
	// round trip; a batch touching more rooms is applied in several round
	// trips of at most this many (nothing is rejected). Default 50000, the
	// default --max-poll-records, so that a default batch takes one apply
	// round trip.
	MaxRoomsPerApply int
	// GenerationFile, when set, is a file (beside the WAL) where the
	// processor keeps the Redis generation its WAL was last applied to. At
	// start, a missing file or one naming another generation means Redis
	// may have lost data this WAL holds, and the processor rebuilds from it
	// before consuming. Empty: the check at start is skipped.
	GenerationFile string
	// GenerationCheckEvery is how often an idle processor (nothing polled)
	// checks that Redis still holds its generation, so that it rebuilds what
	// its WAL holds even when no new records arrive. Default 5s.
	GenerationCheckEvery time.Duration
	// RebuildWindow is how far back state must be rebuilt after Redis lost
	// its data: set it to the room TTL (older rooms would have expired).
	// When the WAL does not reach that far, partitions are rewound to
	// re-consume from Kafka. Default 24h.
	RebuildWindow time.Duration
	Logger        *zap.Logger
	Observer      Observer  // measurements (metrics); default none
	KafkaOpts     []kgo.Opt // extra options of every client (TLS, SASL, test tuning)
	// ConsumerOpts are added to the main client's options only, not to the
	// short-lived readers of recovery: hooks that register once, such as
	// client metrics, and the client's logger.
	ConsumerOpts []kgo.Opt
	// TracerProvider records the processor's spans (docs/tracing.md); nil
	// records none, and records' traceparent headers are continued either
	// way. Default nil.
	TracerProvider trace.TracerProvider

	// Boards are the leaderboards fed by the same batches (docs/DESIGN.md §8); their
	// state lives in BoardStore, which is required when Boards is not empty
	// (typically board.NewStore over the same Redis). Default none.
	Boards     []*boarddef.Board
	BoardStore BoardStore
	// BoardExpireEvery is how often rolling and windows boards subtract the
	// slices that left their windows; default 5s. Expiry is by wall clock
	// and runs also while no event arrives.
	BoardExpireEvery time.Duration
}

// GroupConfig is the processor's place in its consumer group.
type GroupConfig struct {
	Name string // consumer group; default "rostrum-" + Env
	// InstanceID, when set, makes the processor a static member of its group
	// (KIP-345): unique per instance and stable across its restarts (a
	// StatefulSet pod's name), so that a restart within the session timeout
	// does not rebalance the group. Default none (dynamic membership).
	InstanceID string
	// SessionTimeout is how long the group coordinator waits for a heartbeat
	// before it expires a member and hands its partitions to the others: the
	// pause a crashed instance that does not come back causes on its
	// partitions, and how long a network blip or a stalled process may last
	// without losing them. The client heartbeats every tenth of it (at most
	// every 3 s). The broker bounds it (group.min.session.timeout.ms, 6 s,
	// and group.max.session.timeout.ms, 30m, by default). Default 15s.
	// kgo options in KafkaOpts (tests' fast groups) override both timeouts.
	SessionTimeout time.Duration
	// RebalanceTimeout is how long a rebalance waits for the members to
	// rejoin (each finishes the batches in hand first) and for the leader's
	// assignment; a member later than that is dropped from the group. It
	// also bounds the stall a member that died during a rebalance causes
	// (docs/DESIGN.md §3.9). Default 30s.
	RebalanceTimeout time.Duration
	// MemberFile, when set, is a file (beside the WAL) where the processor
	// records its group member id, so that its restart evicts the member a
	// crash left behind instead of waiting for the coordinator to expire it
	// (incarnation.go, docs/DESIGN.md §3.9). Unused with InstanceID.
	// Empty: no record, dead members wait for the timeouts.
	MemberFile string
}

// TopicSetup says how missing topics are created (Create) and what the
// start-up check of existing ones accepts.
type TopicSetup struct {
	// Create creates missing topics at start from TopicSpecs. When
	// false, a missing topic stops start-up with an error naming it.
	Create bool
	// RequireCompactedOutput stops start-up when the output topic exists
	// without cleanup.policy=compact (ErrUncompactedOutput). `rostrum run`
	// sets it unless --allow-uncompacted-output. Default false.
	RequireCompactedOutput bool
	// Partitions of the input and DLQ topics Create creates; default 3.
	Partitions int32
	// OutputPartitions of the output topic Create creates; default
	// Partitions.
	OutputPartitions int32
	// ReplicationFactor of the topics Create creates; default (0 or
	// -1) the broker's default.
	ReplicationFactor int16
	// DLQRetention is the retention.ms of the DLQ Create creates;
	// default DefaultDLQRetention (30 days), negative: forever.
	DLQRetention time.Duration
	// More are further topics the instance produces to (the control
	// API's), checked and created with the others: name → the topic
	// configs to create them with (nil: the broker's defaults).
	More map[string]map[string]*string
}

// StableConfig is the stable strategy and its timing (docs/STABILITY.md).
type StableConfig struct {
	// Strategy is the stable strategy: StabilityHysteresis (default) or
	// StabilityMerge (seed 003's merge). See docs/STABILITY.md.
	Strategy string
	// Dwell is how long a member must hold its place in the raw top-N
	// before it replaces a shown member; 0: none (at once). At most 1m.
	Dwell time.Duration
	// Grace is how long a shown member that fell out of the raw top-N
	// stays; 0: none. At most 1m.
	Grace time.Duration
	// Margin, in volume steps, is the lead over the weakest shown member
	// out of the raw top-N that lets a member replace it at once; 0: off
	// (only the dwell).
	Margin int
	// DueInterval is how often the processor looks for rooms whose dwell or
	// grace has ended without new events; default 100ms.
	DueInterval time.Duration
}

// WALRetention is how much committed history the WAL keeps.
type WALRetention struct {
	PruneEvery time.Duration // how often to prune the WAL; default 1m
	MaxAge     time.Duration // keep at most this much committed history; default 24h
	MaxBytes   int64         // and at most this many bytes; default 1 GiB
}

// RetryConfig is how a failed batch is retried, and when the failures
// make Ready report not ready (backpressure.go).
type RetryConfig struct {
	Backoff time.Duration // first retry delay after a failed batch; default 100ms, doubling to 5s
	// UnreadyFailures and UnreadyAfter say when a failing batch makes Ready
	// report not ready: after this many failed attempts in a row (default
	// 3), or after it has been failing this long (default 10s), whichever
	// comes first. See backpressure.go.
	UnreadyFailures int
	UnreadyAfter    time.Duration
}

func (c *Config) withDefaults() {
	c.Group.withDefaults(c.Env)
	c.TopicSetup.withDefaults()
	c.Stable.withDefaults()
	c.WALRetention.withDefaults()
	c.Retry.withDefaults()
	if c.TopN == 0 {
		c.TopN = 7
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = 50000
	}
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = 64 << 20
	}
	if c.Meeting == nil {
		c.Meeting = codec.NewMeeting(codec.DefaultEpoch)
	}
	if c.UnknownTypes == "" {
		c.UnknownTypes = UnknownTypesSkip
	}
	c.Decode.IgnoreUnknownTypes = c.UnknownTypes == UnknownTypesSkip
	if c.RebuildWindow == 0 {
		c.RebuildWindow = 24 * time.Hour
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 10 * time.Second
	}
	if c.BoardExpireEvery == 0 {
		c.BoardExpireEvery = 5 * time.Second
	}
	if c.AckDelay == 0 {
		c.AckDelay = time.Second
	}
	if c.MaxRoomsPerApply == 0 {
		c.MaxRoomsPerApply = 50000
	}
	if c.GenerationCheckEvery == 0 {
		c.GenerationCheckEvery = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Observer == nil {
		c.Observer = NopObserver{}
	}
	c.Decode = c.Decode.WithDefaults()
}

// The group timeouts' defaults (Config.Group.SessionTimeout, RebalanceTimeout;
// --kafka-session-timeout, --kafka-rebalance-timeout). Shorter than the
// client's own (45 s and 60 s): a ranking is live, and partitions that wait
// a minute for a dead member show a minute-old list. 15 s is still above
// the brokers' 6 s floor and leaves ten heartbeats (every 1.5 s) before a
// member is expired; 30 s lets a member finish the two batches it may hold
// before it rejoins.
const (
	DefaultSessionTimeout   = 15 * time.Second
	DefaultRebalanceTimeout = 30 * time.Second
)

// What to do with events of unknown types (Config.UnknownTypes).
const (
	UnknownTypesSkip = "skip" // skip and count them; the default
	UnknownTypesDLQ  = "dlq"  // send their record to the DLQ
)

var envRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Validate reports the first configuration error as a *config.FieldError
// naming the Config field. Zero values are checked as the defaults they
// stand for.
func (c Config) Validate() error {
	c.withDefaults()
	if len(c.Brokers) == 0 {
		return bad("Brokers", "is required")
	}
	if err := c.validateApply(); err != nil {
		return err
	}
	if err := c.Group.validate(); err != nil {
		return err
	}
	if err := c.TopicSetup.validate(); err != nil {
		return err
	}
	if err := c.Retry.validate(); err != nil {
		return err
	}
	switch {
	case c.MaxPollRecords < 1:
		return bad("MaxPollRecords", "must be at least 1, got %d", c.MaxPollRecords)
	case c.PollTopUp < 0 || c.PollTopUp > time.Second:
		return bad("PollTopUp", "must be between 0 and 1s, got %s", c.PollTopUp)
	case c.MaxBatchBytes < 1 || c.MaxBatchBytes > 192<<20:
		return bad("MaxBatchBytes", "must be between 1 and 192 MiB, got %d", c.MaxBatchBytes)
	case c.AckDelay > time.Minute:
		return bad("AckDelay", "must be at most 1m (negative: none), got %s", c.AckDelay)
	case c.ShutdownTimeout < 0:
		return bad("ShutdownTimeout", "must be positive, got %s", c.ShutdownTimeout)
	case len(c.Boards) > 0 && c.BoardStore == nil:
		return bad("BoardStore", "is required when Boards are configured")
	case c.BoardExpireEvery <= 0:
		return bad("BoardExpireEvery", "must be positive, got %s", c.BoardExpireEvery)
	}
	return nil
}

// validateApply checks the settings that applying a batch takes, which a
// replay of the WAL (ReplayWAL) takes too: the environment, the list's
// length, the stability strategy, unknown types, rooms per round trip.
func (c Config) validateApply() error {
	if err := c.Stable.validate(); err != nil {
		return err
	}
	switch {
	case !envRe.MatchString(c.Env):
		return bad("Env", "%q must be 1-32 characters of [a-z0-9_-], starting with a letter or digit", c.Env)
	case c.TopN < 1 || c.TopN > 100:
		return bad("TopN", "must be between 1 and 100, got %d", c.TopN)
	case c.UnknownTypes != UnknownTypesSkip && c.UnknownTypes != UnknownTypesDLQ:
		return bad("UnknownTypes", "must be %s or %s, got %q", UnknownTypesSkip, UnknownTypesDLQ, c.UnknownTypes)
	case c.MaxRoomsPerApply < 1:
		return bad("MaxRoomsPerApply", "must be at least 1, got %d", c.MaxRoomsPerApply)
	}
	return nil
}

// bad is a FieldError of processor.Config's field.
func bad(field, format string, args ...any) error {
	return config.Errorf("processor.Config", field, format, args...)
}

func (g *GroupConfig) withDefaults(env string) {
	if g.Name == "" {
		g.Name = "rostrum-" + env
	}
	if g.SessionTimeout == 0 {
		g.SessionTimeout = DefaultSessionTimeout
	}
	if g.RebalanceTimeout == 0 {
		g.RebalanceTimeout = DefaultRebalanceTimeout
	}
}

func (g GroupConfig) validate() error {
	switch {
	case g.SessionTimeout < 100*time.Millisecond || g.SessionTimeout > 30*time.Minute:
		return bad("Group.SessionTimeout", "must be between 100ms and 30m, got %s", g.SessionTimeout)
	case g.RebalanceTimeout < 100*time.Millisecond || g.RebalanceTimeout > 30*time.Minute:
		return bad("Group.RebalanceTimeout", "must be between 100ms and 30m, got %s", g.RebalanceTimeout)
	}
	return nil
}

func (t *TopicSetup) withDefaults() {
	if t.Partitions == 0 {
		t.Partitions = 3
	}
	if t.OutputPartitions == 0 {
		t.OutputPartitions = t.Partitions
	}
	if t.ReplicationFactor == 0 {
		t.ReplicationFactor = -1
	}
	if t.DLQRetention == 0 {
		t.DLQRetention = DefaultDLQRetention
	}
}

func (t TopicSetup) validate() error {
	switch {
	case t.Partitions < 1 && t.Partitions != -1:
		return bad("TopicSetup.Partitions", "must be at least 1 (or -1: the broker's default), got %d", t.Partitions)
	case t.OutputPartitions < 1 && t.OutputPartitions != -1:
		return bad("TopicSetup.OutputPartitions", "must be at least 1 (or -1: the broker's default), got %d", t.OutputPartitions)
	case t.ReplicationFactor < -1:
		return bad("TopicSetup.ReplicationFactor", "must be at least 1 (or -1: the broker's default), got %d", t.ReplicationFactor)
	}
	return nil
}

func (s *StableConfig) withDefaults() {
	if s.Strategy == "" {
		s.Strategy = StabilityHysteresis
	}
	if s.DueInterval == 0 {
		s.DueInterval = 100 * time.Millisecond
	}
}

func (s StableConfig) validate() error {
	switch {
	case s.Strategy != StabilityHysteresis && s.Strategy != StabilityMerge:
		return bad("Stable.Strategy", "must be %s or %s, got %q", StabilityHysteresis, StabilityMerge, s.Strategy)
	case s.Dwell < 0 || s.Dwell > time.Minute:
		return bad("Stable.Dwell", "must be between 0 (none) and 1m, got %s", s.Dwell)
	case s.Grace < 0 || s.Grace > time.Minute:
		return bad("Stable.Grace", "must be between 0 (none) and 1m, got %s", s.Grace)
	case s.Margin < 0 || s.Margin > codec.MaxVolume+1:
		return bad("Stable.Margin", "must be between 0 (off) and %d volume steps, got %d", codec.MaxVolume+1, s.Margin)
	case s.DueInterval < time.Millisecond:
		return bad("Stable.DueInterval", "must be at least 1ms, got %s", s.DueInterval)
	}
	return nil
}

func (w *WALRetention) withDefaults() {
	if w.PruneEvery == 0 {
		w.PruneEvery = time.Minute
	}
	if w.MaxAge == 0 {
		w.MaxAge = 24 * time.Hour
	}
	if w.MaxBytes == 0 {
		w.MaxBytes = 1 << 30
	}
}

func (r *RetryConfig) withDefaults() {
	if r.Backoff == 0 {
		r.Backoff = 100 * time.Millisecond
	}
	if r.UnreadyFailures == 0 {
		r.UnreadyFailures = 3
	}
	if r.UnreadyAfter == 0 {
		r.UnreadyAfter = 10 * time.Second
	}
}

func (r RetryConfig) validate() error {
	switch {
	case r.UnreadyFailures < 1:
		return bad("Retry.UnreadyFailures", "must be at least 1, got %d", r.UnreadyFailures)
	case r.UnreadyAfter <= 0:
		return bad("Retry.UnreadyAfter", "must be positive, got %s", r.UnreadyAfter)
	}
	return nil
}

// Topics are the topic names of one environment.
type Topics struct {
	RTC, Client, Signal string // inputs
	DLQ, TopN           string // outputs
	Settled             string // settled periods of the leaderboards (output)
}

// TopicsFor returns the topic names of env with prefix.
func TopicsFor(prefix, env string) Topics {
	p := prefix + env + "."
	return Topics{
		RTC: p + "callbacks.rtc", Client: p + "callbacks.client", Signal: p + "callbacks.signal",
		DLQ: p + "callbacks.dlq", TopN: p + "ranking.topn", Settled: p + "boards.settled",
	}
}

// All lists every topic of the environment: the inputs, then the outputs.
func (t Topics) All() []string {
	return append(t.Inputs(), t.DLQ, t.TopN, t.Settled)
}

// Inputs lists the input topics.
func (t Topics) Inputs() []string { return []string{t.RTC, t.Client, t.Signal} }

// source returns the callback source of an input topic.
func (t Topics) source(topic string) codec.Source {
	switch topic {
	case t.RTC:
		return codec.SourceRTC
	case t.Client:
		return codec.SourceClient
	default:
		return codec.SourceSignal
	}
}
