package testenv

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	// kafkaTimeout bounds each blocking helper (CreateTopics, Produce, ReadAll).
	kafkaTimeout = 30 * time.Second
	// metadataMinAge is the client metadata refresh floor for tests. kgo's
	// default of 5 s makes every broker fault cost about 5 s.
	metadataMinAge = 50 * time.Millisecond
	// groupMinSessionTimeout lets crash tests use short session timeouts
	// (kfake's default floor is 6 s, like Kafka's).
	groupMinSessionTimeout = 100 * time.Millisecond
	// consumerHeartbeat is the KIP-848 heartbeat interval, in ms (Kafka's
	// default is 5000).
	consumerHeartbeat = "100"
)

// Kafka is a Kafka cluster for one test: by default an in-process kfake
// cluster; in a build with the docker tag and ROSTRUM_TEST_DOCKER=1, a
// Redpanda container. Its methods must be called from the test's goroutine,
// as they may end the test.
type Kafka struct {
	// Seeds holds the brokers' host:port addresses.
	Seeds []string
	// Cluster is the in-process kfake cluster, for fault injection
	// (ControlKey, Fault, MoveTopicPartition, …), or nil when Kafka runs
	// in a container. Fake returns it or skips the test.
	Cluster *kfake.Cluster

	tb testing.TB
	// auth holds the SASL and TLS options of every client testenv creates
	// for a cluster started WithSASL or WithKafkaTLS.
	auth []kgo.Opt

	mu   sync.Mutex
	base *kgo.Client // shared by the helpers; created on first use
}

// KafkaOption adjusts how StartKafka builds the cluster.
type KafkaOption func(*kafkaConfig)

type kafkaConfig struct {
	brokers int
	port    int
	topics  []seedTopics
	fake    []kfake.Opt
	sasl    []saslUser
	certs   *Certs
	mutual  bool
}

type saslUser struct{ mechanism, user, pass string }

type seedTopics struct {
	partitions int32
	topics     []string
}

// WithTopics creates topics with the given number of partitions (replication
// factor 1; partitions ≤ 0 means the broker's default) before StartKafka
// returns. It may be given several times.
func WithTopics(partitions int32, topics ...string) KafkaOption {
	return func(c *kafkaConfig) { c.topics = append(c.topics, seedTopics{partitions, topics}) }
}

// WithBrokers sets the number of kfake brokers (default 1). A container-backed
// Kafka ignores it and has one broker.
func WithBrokers(n int) KafkaOption { return func(c *kafkaConfig) { c.brokers = n } }

// WithPort makes the first kfake broker listen on 127.0.0.1:port (the others,
// if any, on free ports), for tests that run a process which must be told the
// address in advance. A container-backed Kafka ignores it.
func WithPort(port int) KafkaOption { return func(c *kafkaConfig) { c.port = port } }

// WithKfakeOptions passes options to kfake.NewCluster after testenv's own, so
// they override them; for instance kfake.BrokerConfigs to lower
// group.consumer.session.timeout.ms for KIP-848 crash tests, or
// kfake.AllowAutoTopicCreation. A container-backed Kafka ignores them.
func WithKfakeOptions(opts ...kfake.Opt) KafkaOption {
	return func(c *kafkaConfig) { c.fake = append(c.fake, opts...) }
}

// WithSASL turns SASL authentication on and adds a superuser with the given
// mechanism ("PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"), name and password.
// It may be given several times; testenv's own clients authenticate as the
// first user. A container-backed Kafka ignores it.
func WithSASL(mechanism, user, pass string) KafkaOption {
	return func(c *kafkaConfig) { c.sasl = append(c.sasl, saslUser{mechanism, user, pass}) }
}

// WithKafkaTLS makes the brokers speak TLS only, presenting c's server
// certificate; with mutual, clients must present a certificate signed by c's
// CA. testenv's own clients use c.ClientConfig. A container-backed Kafka
// ignores it.
func WithKafkaTLS(c *Certs, mutual bool) KafkaOption {
	return func(cfg *kafkaConfig) { cfg.certs, cfg.mutual = c, mutual }
}

// StartKafka starts a kfake cluster listening on loopback and closes it when
// the test ends. Topics are not created automatically: use WithTopics or
// CreateTopics. Defaults suited to tests: one broker, a minimum group
// session timeout of 100 ms (so crash tests may set kgo.SessionTimeout
// low), and a KIP-848 heartbeat interval of 100 ms.
//
// In a build with the docker tag and ROSTRUM_TEST_DOCKER=1 it starts a
// Redpanda container instead, with Cluster nil, or skips the test when no
// Docker engine is reachable.
func StartKafka(tb testing.TB, opts ...KafkaOption) *Kafka {
	tb.Helper()
	cfg := kafkaConfig{brokers: 1}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.brokers < 1 {
		tb.Fatalf("testenv: WithBrokers(%d): need at least one broker", cfg.brokers)
	}
	if cfg.port < 0 || cfg.port > 65535 {
		tb.Fatalf("testenv: WithPort(%d): not a TCP port", cfg.port)
	}

	k := &Kafka{tb: tb}
	if seeds, ok := dockerKafka(tb); ok {
		k.Seeds = seeds
		for _, st := range cfg.topics {
			k.CreateTopics(st.partitions, st.topics...)
		}
		return k
	}

	fopts := []kfake.Opt{
		kfake.NumBrokers(cfg.brokers),
		kfake.GroupMinSessionTimeout(groupMinSessionTimeout),
		kfake.BrokerConfigs(map[string]string{"group.consumer.heartbeat.interval.ms": consumerHeartbeat}),
	}
	if cfg.port != 0 {
		ports := make([]int, cfg.brokers) // 0: a free port
		ports[0] = cfg.port
		fopts = append(fopts, kfake.Ports(ports...))
	}
	for _, st := range cfg.topics {
		fopts = append(fopts, kfake.SeedTopics(st.partitions, st.topics...))
	}
	if len(cfg.sasl) > 0 {
		fopts = append(fopts, kfake.EnableSASL())
		for _, u := range cfg.sasl {
			fopts = append(fopts, kfake.Superuser(u.mechanism, u.user, u.pass))
		}
		k.auth = append(k.auth, kgo.SASL(saslMechanism(tb, cfg.sasl[0])))
	}
	if cfg.certs != nil {
		fopts = append(fopts, kfake.TLS(cfg.certs.ServerConfig(cfg.mutual)))
		k.auth = append(k.auth, kgo.DialTLSConfig(cfg.certs.ClientConfig()))
	}
	fopts = append(fopts, cfg.fake...)
	c, err := kfake.NewCluster(fopts...)
	if err != nil {
		tb.Fatalf("testenv: start kfake cluster: %v", err)
	}
	tb.Cleanup(c.Close)
	k.Cluster = c
	k.Seeds = c.ListenAddrs()
	return k
}

// Fake returns the in-process kfake cluster for fault injection, skipping the
// test with a message when Kafka runs in a container.
func (k *Kafka) Fake() *kfake.Cluster {
	k.tb.Helper()
	if k.Cluster == nil {
		k.tb.Skip("testenv: fault injection needs the in-process kfake cluster; Kafka runs in a container (ROSTRUM_TEST_DOCKER=1)")
	}
	return k.Cluster
}

// Fault installs kfake faults (see kfake.Fault) and removes them when the
// test ends; the handle can remove them earlier. It skips the test when
// Kafka runs in a container.
func (k *Kafka) Fault(faults ...kfake.Fault) *kfake.FaultHandle {
	k.tb.Helper()
	h := k.Fake().Fault(faults...)
	k.tb.Cleanup(h.Remove)
	return h
}

// Client returns a kgo client seeded with the cluster's brokers, with
// metadata refreshed at most every 50 ms and the cluster's SASL and TLS
// settings, then opts (which override those; but kgo.SASL adds a mechanism
// after the cluster's own, which kgo tries first).
// It is closed when the test ends; closing it earlier too is fine.
func (k *Kafka) Client(opts ...kgo.Opt) *kgo.Client {
	k.tb.Helper()
	all := append([]kgo.Opt{kgo.SeedBrokers(k.Seeds...), kgo.MetadataMinAge(metadataMinAge)}, k.auth...)
	cl, err := kgo.NewClient(append(all, opts...)...)
	if err != nil {
		k.tb.Fatalf("testenv: new kgo client for %v: %v", k.Seeds, err)
	}
	k.tb.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client on its own Client, closed when the test ends.
func (k *Kafka) Admin() *kadm.Client {
	k.tb.Helper()
	return kadm.NewClient(k.Client())
}

// helper returns the client shared by CreateTopics, Produce and ReadAll.
func (k *Kafka) helper() *kgo.Client {
	k.tb.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.base == nil {
		k.base = k.Client()
	}
	return k.base
}

// CreateTopics creates topics with the given number of partitions and
// replication factor 1, failing the test if any already exists or cannot be
// created.
func (k *Kafka) CreateTopics(partitions int32, topics ...string) {
	k.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	resp, err := kadm.NewClient(k.helper()).CreateTopics(ctx, partitions, 1, nil, topics...)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		k.tb.Fatalf("testenv: create topics %v with %d partitions: %v", topics, partitions, err)
	}
}

// Produce writes one record and waits for the broker to acknowledge it. It
// returns the record with its partition and offset filled in. The topic must
// exist.
func (k *Kafka) Produce(topic string, key, value []byte) *kgo.Record {
	k.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	r, err := k.helper().ProduceSync(ctx, &kgo.Record{Topic: topic, Key: key, Value: value}).First()
	if err != nil {
		k.tb.Fatalf("testenv: produce to %s: %v", topic, err)
	}
	return r
}

// ReadAll returns the records of topic as a read-committed consumer sees
// them, without a group: every partition from its start up to its last
// stable offset as listed when ReadAll is called (the high watermark when no
// transaction is open). Records of aborted transactions and control records
// are left out; records produced during the call are not waited for. The
// result is ordered by partition, then offset. It fails the test if the topic
// does not exist or the records are not read within 30 s.
func (k *Kafka) ReadAll(topic string) []*kgo.Record {
	k.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kafkaTimeout)
	defer cancel()
	adm := kadm.NewClient(k.helper())
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		k.tb.Fatalf("testenv: ReadAll %s: list start offsets: %v", topic, err)
	}
	ends, err := adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		k.tb.Fatalf("testenv: ReadAll %s: list end offsets: %v", topic, err)
	}
	if len(ends[topic]) == 0 {
		k.tb.Fatalf("testenv: ReadAll %s: topic has no partitions", topic)
	}

	// next[p] is the offset after the last record read from partition p;
	// end[p] is where reading p stops.
	next := make(map[int32]int64)
	end := make(map[int32]int64)
	from := make(map[int32]kgo.Offset)
	for p, e := range ends[topic] {
		s, _ := starts.Lookup(topic, p)
		if e.Offset > s.Offset {
			next[p], end[p] = s.Offset, e.Offset
			from[p] = kgo.NewOffset().At(s.Offset)
		}
	}
	if len(from) == 0 {
		return nil
	}

	// Control records are kept so that a partition ending in a
	// transaction marker is seen to reach its end.
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(k.Seeds...),
		kgo.MetadataMinAge(metadataMinAge),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, k.auth...)...)
	if err != nil {
		k.tb.Fatalf("testenv: ReadAll %s: new kgo client: %v", topic, err)
	}
	defer cl.Close()

	byPart := make(map[int32][]*kgo.Record)
	for done := 0; done < len(end); {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			k.tb.Fatalf("testenv: ReadAll %s: not done after %s: read up to %v of %v", topic, kafkaTimeout, next, end)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			k.tb.Fatalf("testenv: ReadAll %s: fetch partition %d: %v", topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			p := r.Partition
			if r.Offset < next[p] || r.Offset >= end[p] {
				return
			}
			if !r.Attrs.IsControl() {
				byPart[p] = append(byPart[p], r)
			}
			next[p] = r.Offset + 1
			if next[p] == end[p] {
				done++
			}
		})
	}

	var out []*kgo.Record
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		out = append(out, byPart[p]...)
	}
	return out
}

// saslMechanism returns the client side of u's mechanism.
func saslMechanism(tb testing.TB, u saslUser) sasl.Mechanism {
	tb.Helper()
	switch u.mechanism {
	case "PLAIN":
		return plain.Auth{User: u.user, Pass: u.pass}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: u.user, Pass: u.pass}.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		return scram.Auth{User: u.user, Pass: u.pass}.AsSha512Mechanism()
	}
	tb.Fatalf("testenv: WithSASL: unknown mechanism %q (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", u.mechanism)
	return nil
}

// WaitCaughtUp waits until group has committed offsets on all partitions of
// its topics (partitions in all) with no lag left, and fails t after
// timeout; hint, when not empty, is added to the failure (where the logs
// are, for example).
func (k *Kafka) WaitCaughtUp(t testing.TB, group string, partitions int, timeout time.Duration, hint string) {
	t.Helper()
	adm := k.Admin()
	deadline := time.Now().Add(timeout)
	for {
		lag, err := adm.Lag(context.Background(), group)
		if err == nil {
			var total int64
			var seen int
			lag.Each(func(l kadm.DescribedGroupLag) {
				for _, ps := range l.Lag {
					for _, pl := range ps {
						if pl.Commit.At >= 0 {
							seen++
						}
						total += pl.Lag
					}
				}
			})
			if seen == partitions && total == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			if hint != "" {
				hint = "; " + hint
			}
			t.Fatalf("group %s did not catch up within %s (last lag error %v)%s", group, timeout, err, hint)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// FastGroupOpts are consumer client options that make group changes fast
// enough for tests: a killed or paused consumer loses its partitions after
// 1.5 s, and metadata and fetches refresh within 100 ms.
func FastGroupOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.SessionTimeout(1500 * time.Millisecond),
		kgo.HeartbeatInterval(150 * time.Millisecond),
		kgo.RebalanceTimeout(5 * time.Second),
		kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
}
