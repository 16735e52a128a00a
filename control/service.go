package control

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/redisscript"
)

// Producer sends records to Kafka and waits for their acknowledgement.
// *kgo.Client implements it; give it kgo.RecordDeliveryTimeout no longer
// than Config.ProduceTimeout. New builds the Lookup the recovery needs
// from a *kgo.Client; any other Producer needs Config.Lookup.
type Producer interface {
	ProduceSync(ctx context.Context, rs ...*kgo.Record) kgo.ProduceResults
}

var _ Producer = (*kgo.Client)(nil)

// ErrUnconfirmed is returned by a write whose change the Redis primary
// made but fewer than Config.Replicas replicas confirmed in time. The
// change is not published now; if it survives, the outbox publishes it
// once its lease ends.
var ErrUnconfirmed = errors.New("control: change not confirmed by the replicas in time")

// Service is the recording control and the layout parameters of one
// environment's rooms. It is safe for concurrent use; any number of
// Services (one per rostrum instance) may serve the same rooms.
type Service struct {
	rc  redis.UniversalClient
	lua *redisscript.Runner // the control scripts, with the NOSCRIPT policy of sink and board
	pr  Producer
	lk  Lookup // what a recovery asks before it publishes (outbox.go)
	opt Config
	lg  *zap.Logger
}

// New returns a Service deciding in rc and publishing with pr.
func New(rc redis.UniversalClient, pr Producer, opts Config) (*Service, error) {
	opts.setDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Replicas > 0 {
		switch rc.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("--control-replicas needs a single-node, Sentinel or Cluster client, got %T", rc)
		}
	}
	lk := opts.Lookup
	if lk == nil {
		cl, ok := pr.(*kgo.Client)
		if !ok {
			return nil, fmt.Errorf("control: Lookup is required with a %T producer", pr)
		}
		lk = NewKafkaLookup(cl)
	}
	if opts.Tokens == nil && opts.Insecure {
		opts.Logger.Warn("control API serving without authentication (--control-insecure): anyone who reaches the HTTP port can start and stop recordings")
	}
	return &Service{rc: rc, lua: redisscript.NewRunner(rc, scripts...), pr: pr, lk: lk, opt: opts, lg: opts.Logger}, nil
}

// step runs a room script (keys[0] names the room's slot). With
// Config.Replicas it runs it and WAIT on one connection to the room's
// primary, and reports whether enough replicas confirmed.
func (s *Service) step(ctx context.Context, sc *redisscript.Script, write bool, keys []string, args ...any) ([]any, bool, error) {
	if !write || s.opt.Replicas == 0 {
		v, err := s.lua.Run(ctx, sc, keys, args...).Slice()
		return v, true, err
	}
	var node *redis.Client
	switch c := s.rc.(type) {
	case *redis.ClusterClient:
		n, err := c.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, false, err
		}
		node = n
	case *redis.Client:
		node = c
	}
	// WAIT counts the replicas that acknowledged this connection's writes,
	// so it must follow the script on the same connection: a pipeline. The
	// script goes as EVAL (its source), which cannot meet NOSCRIPT: a retry
	// on another connection would not be the one WAIT counts.
	p := node.Pipeline()
	ev := p.Eval(ctx, sc.Source(), keys, args...)
	w := p.Do(ctx, "WAIT", s.opt.Replicas, s.opt.ReplicaTimeout.Milliseconds())
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	v, err := ev.Slice()
	if err != nil {
		return nil, false, err
	}
	acked, _ := w.Int64()
	return v, acked >= int64(s.opt.Replicas), nil
}

// arm enters a write in the outbox index before its Redis step, and
// returns its member (see outbox.go).
func (s *Service) arm(ctx context.Context, room string) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	member := room + "\n" + hex.EncodeToString(b[:])
	err := s.rc.ZAdd(ctx, outboxIndex(s.opt.Env), redis.Z{Score: float64(time.Now().UnixMilli()), Member: member}).Err()
	if err != nil {
		return "", fmt.Errorf("control: outbox index: %w", err)
	}
	return member, nil
}

// disarm removes a write's index member, and with field its outbox entry,
// once its record is published (or it wrote none). A failure leaves both
// for the sweep: the entry is published again after its lease, which only
// a crash or an unreachable Redis can cause.
func (s *Service) disarm(ctx context.Context, room, member, field string) {
	ctx = context.WithoutCancel(ctx)
	for range 3 {
		p := s.rc.Pipeline()
		if field != "" {
			p.HDel(ctx, roomKeys(s.opt.Env, room).Out, field, "l:"+field)
		}
		p.ZRem(ctx, outboxIndex(s.opt.Env), member)
		_, err := p.Exec(ctx)
		if err == nil {
			return
		}
		s.lg.Warn("control: clear outbox entry", zap.String("room", room), zap.Error(err))
	}
}

// errLeaseEnding is returned by publish when less than ProduceTimeout plus
// landing() is left of the caller's lease: a produce begun then could still
// land after the lease has ended, when a recovery may already have looked
// for the record and published it. The entry stays for that recovery.
var errLeaseEnding = errors.New("control: too little of the outbox lease left to publish")

// errUnresolved is returned by publish when the produce got no answer
// within ProduceTimeout: the record may still land. The publisher keeps
// the entry's lease until the produce resolves (hold).
var errUnresolved = errors.New("control: the brokers did not answer the produce in time")

// entry names an outbox entry: the room's outbox hash and the field.
type entry struct{ out, field string }

// publish produces records (key: room) to topic and waits for Kafka's
// acknowledgement, at most ProduceTimeout, if the caller's lease of entry,
// taken no earlier than leased, lasts that long. Each record carries the
// headers of its kind (headersOf); the outbox keeps the value alone, so a
// recovered record gets the same headers as its writer would have sent,
// and a recovery's lookup compares key and value only. The records keep the
// client's timestamp, the publisher's clock when it produces them, after
// their step's "at": franz-go counts kgo.RecordDeliveryTimeout from a
// record's timestamp, so a recovered record stamped with its old "at" would
// time out before it is sent.
//
// franz-go's idempotent producer does not fail a record it has sent and
// got no answer for (it retries it), so a produce can outlive
// ProduceTimeout and land much later. publish then answers errUnresolved
// and holds the entry's lease until the produce resolves: no recovery can
// claim the entry, look for its record and publish it again before the
// record has landed or failed for good.
func (s *Service) publish(ctx context.Context, leased time.Time, e entry, topic, room string, values ...string) error {
	if time.Since(leased)+s.opt.ProduceTimeout+s.landing() >= s.opt.Lease {
		return fmt.Errorf("control: publish to %s: %w", topic, errLeaseEnding)
	}
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: topic, Key: []byte(room), Value: []byte(v), Headers: s.headersOf(topic)}
	}
	done := make(chan error, 1)
	go func() {
		// Records not sent by then fail at ProduceTimeout; a sent one
		// resolves when the brokers answer one of its retries.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opt.ProduceTimeout)
		defer cancel()
		done <- s.pr.ProduceSync(pctx, rs...).FirstErr()
	}()
	wait := time.NewTimer(s.opt.ProduceTimeout + produceGrace)
	defer wait.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("control: publish to %s: %w", topic, err)
		}
		return nil
	case <-wait.C:
		go s.hold(e, room, done)
		return fmt.Errorf("control: publish to %s: %w", topic, errUnresolved)
	}
}

// produceGrace is how long publish waits beyond ProduceTimeout for the
// producer's own answer (the failure of a record it did not send).
const produceGrace = 100 * time.Millisecond

// hold renews the lease of entry e until its produce resolves (done). If
// a renewal finds the lease ended (the process stalled longer than what was
// left of it), it stops: a recovery may then publish the record a second
// time, which is logged.
func (s *Service) hold(e entry, room string, done <-chan error) {
	tick := time.NewTicker(s.opt.Lease / 4)
	defer tick.Stop()
	for renew := true; ; renew = false {
		if !renew {
			select {
			case err := <-done:
				s.lg.Info("control: an unanswered produce resolved; its outbox entry goes to the recovery after its lease",
					zap.String("room", room), zap.String("entry", e.field), zap.Error(err))
				return
			case <-tick.C:
			}
		}
		ok, err := s.lua.Run(context.Background(), renewScript, []string{e.out}, e.field, ms(s.opt.Lease)).Int()
		switch {
		case err != nil:
			s.lg.Warn("control: renew the lease of an outbox entry", zap.String("room", room), zap.String("entry", e.field), zap.Error(err))
		case ok == 0:
			s.lg.Warn("control: the lease of an outbox entry ended while its produce was unanswered; a recovery may publish its record again",
				zap.String("room", room), zap.String("entry", e.field))
			return
		}
	}
}

// landing is the time a publisher leaves, after its last possible send,
// for a record to be appended and visible on the topic before its lease
// ends: half of what the lease leaves beyond ProduceTimeout (10s by
// default). The other half is what a publisher may spend before it begins
// to produce (the step and WAIT of a writer; the claim and lookup of a
// recovery).
func (s *Service) landing() time.Duration { return (s.opt.Lease - s.opt.ProduceTimeout) / 2 }

// fault calls the test hook at point.
func (s *Service) fault(point string) error {
	if s.opt.Fault == nil {
		return nil
	}
	return s.opt.Fault(point)
}

// headersOf returns the headers of a record on topic (docs/DESIGN.md §2):
// its content type and its kind, recording.command/1 on the commands topic,
// rooms.layout/1 on the layout topic.
func (s *Service) headersOf(topic string) []kgo.RecordHeader {
	schema := codec.SchemaCommand
	if topic == s.opt.LayoutTopic {
		schema = codec.SchemaLayout
	}
	return []kgo.RecordHeader{
		{Key: codec.HeaderContentType, Value: []byte(codec.ContentTypeJSON)},
		{Key: codec.HeaderSchema, Value: []byte(schema)},
	}
}

// topicOf returns the topic of an outbox field.
func (s *Service) topicOf(field string) string {
	if len(field) > 0 && field[0] == 'y' {
		return s.opt.LayoutTopic
	}
	return s.opt.CommandsTopic
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
