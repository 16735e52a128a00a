package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/internal/httpserve"
	"github.com/rostrumhq/rostrum/internal/problem"
	"github.com/rostrumhq/rostrum/processor"
)

// opsFlags are the operational settings of `rostrum run`: how
// --create-topics creates topics, what the start-up checks accept, static
// group membership, the group's timeouts and the admin listener.
type opsFlags struct {
	topicPartitions        int
	outputPartitions       int
	replicationFactor      int
	dlqRetention           time.Duration
	allowUncompactedOutput bool
	instanceID             string
	sessionTimeout         time.Duration
	rebalanceTimeout       time.Duration
	adminHTTP              string
}

func (f *opsFlags) register(fs *cli.FlagSet) {
	fs.Group("kafka").Tuning().Sets("TopicSetup.Partitions").IntVar(&f.topicPartitions, "topic-partitions", 3, "partitions of the callback and DLQ topics --create-topics creates (-1: the broker's default)")
	fs.Group("kafka").Tuning().Sets("TopicSetup.OutputPartitions").IntVar(&f.outputPartitions, "output-partitions", 0, "partitions of the output topic --create-topics creates (0: --topic-partitions)")
	fs.Group("kafka").Tuning().Sets("TopicSetup.ReplicationFactor").IntVar(&f.replicationFactor, "replication-factor", -1, "replication factor of the topics --create-topics creates (-1: the broker's default)")
	fs.Group("kafka").Tuning().Sets("TopicSetup.DLQRetention").DurationVar(&f.dlqRetention, "dlq-retention", processor.DefaultDLQRetention, "retention of the DLQ topic --create-topics creates (negative: forever)")
	fs.Group("kafka").Tuning().Sets("TopicSetup.RequireCompactedOutput").BoolVar(&f.allowUncompactedOutput, "allow-uncompacted-output", false, "start although the output topic is not compacted (cleanup.policy=compact)")
	fs.Group("kafka").Tuning().Sets("Group.InstanceID").StringVar(&f.instanceID, "instance-id", "", "static consumer group membership: an id unique to this instance and stable across its restarts (e.g. the pod name), so that a restart does not rebalance the group")
	fs.Group("kafka").Tuning().Sets("Group.SessionTimeout").DurationVar(&f.sessionTimeout, "kafka-session-timeout", processor.DefaultSessionTimeout, "how long the consumer group waits for a heartbeat before it expires a member and moves its partitions (the pause a crashed instance that does not come back causes); shorter fails over sooner, longer survives longer network blips and stalls (the broker allows 6s..30m by default)")
	fs.Group("kafka").Tuning().Sets("Group.RebalanceTimeout").DurationVar(&f.rebalanceTimeout, "kafka-rebalance-timeout", processor.DefaultRebalanceTimeout, "how long a rebalance waits for the members to rejoin and for the assignment; also bounds the stall a member that died during a rebalance causes (docs/DESIGN.md §3.9)")
	fs.Group("ops").Tuning().StringVar(&f.adminHTTP, "admin-http", "", "address of the admin HTTP listener serving /debug/pprof (empty: off); never expose it publicly")
}

// apply sets the settings in the processor configuration, whose Validate
// checks them.
func (f *opsFlags) apply(pc *processor.Config) error {
	if f.topicPartitions == 0 || f.topicPartitions > 1<<20 {
		return fmt.Errorf("--topic-partitions must be at least 1 (or -1), got %d", f.topicPartitions)
	}
	if f.outputPartitions < -1 || f.outputPartitions > 1<<20 {
		return fmt.Errorf("--output-partitions must be at least 1 (0: --topic-partitions, -1: the broker's default), got %d", f.outputPartitions)
	}
	if f.replicationFactor == 0 || f.replicationFactor < -1 || f.replicationFactor > 1<<10 {
		return fmt.Errorf("--replication-factor must be at least 1 (or -1), got %d", f.replicationFactor)
	}
	pc.TopicSetup.Partitions = int32(f.topicPartitions)
	pc.TopicSetup.OutputPartitions = int32(f.outputPartitions)
	pc.TopicSetup.ReplicationFactor = int16(f.replicationFactor)
	pc.TopicSetup.DLQRetention = f.dlqRetention
	pc.TopicSetup.RequireCompactedOutput = !f.allowUncompactedOutput
	pc.Group.InstanceID = f.instanceID
	pc.Group.SessionTimeout = f.sessionTimeout
	pc.Group.RebalanceTimeout = f.rebalanceTimeout
	return nil
}

// serveAdmin serves adminHandler on addr until ctx ends, under the limits
// of every listener (internal/httpserve; net/http/pprof lengthens the
// write deadline of a profile or trace by its ?seconds=). The listener is
// separate from --http so that profiling is never reachable where the
// live page and /metrics are.
func serveAdmin(ctx context.Context, addr string, lg *zap.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--admin-http %s: %w", addr, err)
	}
	if err := serveAdminOn(ctx, ln, httpserve.Limits{}, lg); err != nil {
		return fmt.Errorf("--admin-http %s: %w", addr, err)
	}
	return nil
}

// serveAdminOn serves adminHandler on ln under lim until ctx ends.
func serveAdminOn(ctx context.Context, ln net.Listener, lim httpserve.Limits, lg *zap.Logger) error {
	return httpserve.Serve(ctx, ln, adminHandler(), httpserve.Config{Limits: lim, Name: "admin", Logger: lg})
}

// adminHandler serves the profiles of /debug/pprof/, its profile, symbol
// and trace endpoints, and nothing else: not /debug/pprof/cmdline, which
// shows the command line, and with it any password given as a flag. Every
// error, an unknown route or profile too, is a problem (RFC 9457).
func adminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/debug/pprof/cmdline" {
			http.NotFound(w, r)
			return
		}
		pprof.Index(w, r)
	})
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol) // go tool pprof posts addresses
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return problem.Handler(mux)
}

// kafkaLogger routes franz-go's own log lines to zap as logger "kafka", at
// warn level and above: a broker refusing connections or a request that
// keeps failing shows in rostrum's log without the client's chatter.
type kafkaLogger struct{ lg *zap.Logger }

func newKafkaLogger(lg *zap.Logger) kgo.Logger { return kafkaLogger{lg.Named("kafka")} }

func (kafkaLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (l kafkaLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	fields := make([]zap.Field, 0, len(keyvals)/2)
	for i := 0; i+1 < len(keyvals); i += 2 {
		k, ok := keyvals[i].(string)
		if !ok {
			k = fmt.Sprint(keyvals[i])
		}
		fields = append(fields, zap.Any(k, keyvals[i+1]))
	}
	switch level {
	case kgo.LogLevelError:
		l.lg.Error(msg, fields...)
	case kgo.LogLevelWarn:
		l.lg.Warn(msg, fields...)
	case kgo.LogLevelInfo:
		l.lg.Info(msg, fields...)
	default:
		l.lg.Debug(msg, fields...)
	}
}
