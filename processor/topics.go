package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The topic specifications live here, once: --create-topics creates the
// topics from them and `rostrum check` (and the start-up of `rostrum run`)
// verifies existing topics against them. docs/DESIGN.md §2 lists the topics.

// DefaultDLQRetention is how long the DLQ keeps records when the processor
// creates it: long enough to notice a problem over a holiday, inspect the
// records and redrive them (`rostrum dlq`).
const DefaultDLQRetention = 30 * 24 * time.Hour

// Topic roles, as TopicSpec.Role says them.
const (
	RoleInput  = "input"  // a callback topic the processor consumes
	RoleDLQ    = "dlq"    // the dead-letter topic
	RoleOutput = "output" // the ranking output: compacted, keyed by room
	RoleOther  = "other"  // a further topic: the boards' settled periods, the control API's
)

// TopicSpec is how one topic is created.
type TopicSpec struct {
	Name       string
	Role       string            // RoleInput, RoleDLQ, RoleOutput or RoleOther
	Partitions int32             // -1: the broker's default
	Configs    map[string]string // topic configs set at creation
}

// Compacted reports whether the spec asks for log compaction.
func (s TopicSpec) Compacted() bool { return isCompacted(s.Configs["cleanup.policy"]) }

// TopicSpecs returns the specifications of the topics of c's environment:
// the three inputs and the DLQ with c.Partitions partitions, the DLQ kept
// for c.DLQRetention, and the output with c.OutputPartitions partitions and
// cleanup.policy=compact (a subscriber that starts late reads the last list
// of every room, and the recovery seeds seq from it, docs/DESIGN.md §1).
func (c Config) TopicSpecs() []TopicSpec {
	c.withDefaults()
	t := TopicsFor(c.TopicPrefix, c.Env)
	var specs []TopicSpec
	for _, in := range t.Inputs() {
		specs = append(specs, TopicSpec{Name: in, Role: RoleInput, Partitions: c.TopicSetup.Partitions})
	}
	dlq := map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"} // negative DLQRetention: forever
	if c.TopicSetup.DLQRetention > 0 {
		dlq["retention.ms"] = strconv.FormatInt(c.TopicSetup.DLQRetention.Milliseconds(), 10)
	}
	specs = append(specs,
		TopicSpec{Name: t.DLQ, Role: RoleDLQ, Partitions: c.TopicSetup.Partitions, Configs: dlq},
		TopicSpec{Name: t.TopN, Role: RoleOutput, Partitions: c.TopicSetup.OutputPartitions,
			Configs: map[string]string{"cleanup.policy": "compact"}})
	if len(c.Boards) > 0 {
		// One record per settled period, keyed board/period: compacted,
		// like the output, so a late reader finds every period once.
		specs = append(specs, TopicSpec{Name: t.Settled, Role: RoleOther, Partitions: c.TopicSetup.Partitions,
			Configs: map[string]string{"cleanup.policy": "compact"}})
	}
	names := make([]string, 0, len(c.TopicSetup.More))
	for name := range c.TopicSetup.More {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		configs := map[string]string{}
		for k, v := range c.TopicSetup.More[name] {
			if v != nil {
				configs[k] = *v
			}
		}
		specs = append(specs, TopicSpec{Name: name, Role: RoleOther, Partitions: c.TopicSetup.Partitions, Configs: configs})
	}
	return specs
}

// TopicState is what the brokers say of one topic.
type TopicState struct {
	Name       string
	Exists     bool
	Partitions int
	// Configs holds the topic's configs that the brokers report (defaults
	// included); nil when they could not be described.
	Configs map[string]string
	Err     error // the topic could not be listed or described
}

// Compacted reports whether the topic's cleanup.policy includes compact.
func (s TopicState) Compacted() bool { return isCompacted(s.Configs["cleanup.policy"]) }

func isCompacted(policy string) bool {
	return slices.Contains(strings.Split(policy, ","), "compact")
}

// DescribeTopics reports the existence, partition count and configs of the
// named topics. It returns an error only when the brokers cannot be asked;
// a topic that cannot be described carries its own Err.
func DescribeTopics(ctx context.Context, adm *kadm.Client, names ...string) ([]TopicState, error) {
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, err
	}
	out := make([]TopicState, len(names))
	var present []string
	for i, n := range names {
		out[i].Name = n
		d, ok := details[n]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
		case d.Err != nil:
			out[i].Err = d.Err
		default:
			out[i].Exists = true
			out[i].Partitions = len(d.Partitions)
			present = append(present, n)
		}
	}
	if len(present) == 0 {
		return out, nil
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, present...)
	if err != nil && len(cfgs) == 0 {
		for i := range out {
			if out[i].Exists {
				out[i].Err = fmt.Errorf("describe configs: %w", err)
			}
		}
		return out, nil
	}
	for _, rc := range cfgs {
		i := slices.Index(names, rc.Name)
		if i < 0 {
			continue
		}
		if rc.Err != nil {
			out[i].Err = fmt.Errorf("describe configs: %w", rc.Err)
			continue
		}
		out[i].Configs = make(map[string]string, len(rc.Configs))
		for _, c := range rc.Configs {
			out[i].Configs[c.Key] = c.MaybeValue()
		}
	}
	return out, nil
}

// CreateTopics creates the topics of specs that do not exist yet, each with
// its partitions and configs and replication factor rf (-1: the broker's
// default). It returns the names it created, once the brokers' metadata
// lists them; a topic created meanwhile by another processor is not an
// error.
func CreateTopics(ctx context.Context, adm *kadm.Client, specs []TopicSpec, rf int16) ([]string, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	states, err := DescribeTopics(ctx, adm, names...)
	if err != nil {
		return nil, err
	}
	var created []string
	for i, s := range specs {
		if states[i].Exists {
			continue
		}
		var cfg map[string]*string
		if len(s.Configs) > 0 {
			cfg = make(map[string]*string, len(s.Configs))
			for k, v := range s.Configs {
				cfg[k] = &v
			}
		}
		if _, err := adm.CreateTopic(ctx, s.Partitions, rf, cfg, s.Name); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return created, fmt.Errorf("create topic %s: %w", s.Name, err)
		}
		created = append(created, s.Name)
	}
	return created, waitTopics(ctx, adm, created)
}

// waitTopics returns once the brokers' metadata lists every topic of names:
// a created topic reaches the metadata of every broker a moment after
// CreateTopics answered.
func waitTopics(ctx context.Context, adm *kadm.Client, names []string) error {
	for len(names) > 0 {
		states, err := DescribeTopics(ctx, adm, names...)
		if err != nil {
			return err
		}
		var missing []string
		for _, st := range states {
			if !st.Exists {
				missing = append(missing, st.Name)
			}
		}
		if names = missing; len(names) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("created topics %v not in the metadata yet: %w", names, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// ErrUncompactedOutput is returned by CheckOutputCompacted when the output
// topic does not have cleanup.policy=compact.
var ErrUncompactedOutput = errors.New("output topic not compacted")

// CheckOutputCompacted returns an error wrapping ErrUncompactedOutput when
// the output topic of specs exists without compaction: without it the topic
// grows without bound and recovery reads every record ever published to
// find each room's last list.
func CheckOutputCompacted(ctx context.Context, adm *kadm.Client, specs []TopicSpec) error {
	for _, s := range specs {
		if s.Role != RoleOutput {
			continue
		}
		st, err := DescribeTopics(ctx, adm, s.Name)
		if err != nil {
			return err
		}
		switch {
		case st[0].Err != nil:
			return fmt.Errorf("topic %s: %w", s.Name, st[0].Err)
		case st[0].Exists && !st[0].Compacted():
			return fmt.Errorf("%w: %s has cleanup.policy=%s, want compact (kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config cleanup.policy=compact)",
				ErrUncompactedOutput, s.Name, st[0].Configs["cleanup.policy"], s.Name)
		}
	}
	return nil
}
