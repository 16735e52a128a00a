package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// EnsureTopics checks that every topic exists. With create, missing ones
// are created with partitions partitions (≤ 0: the broker's default) and
// the broker's default replication; without it, the first missing topic is
// an error naming it and the flag that would create it.
func EnsureTopics(ctx context.Context, cl *kgo.Client, topics []string, create bool, partitions int32) error {
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topics...)
	if err != nil {
		return fmt.Errorf("gateway: list topics: %w", err)
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[t]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		case d.Err != nil:
			return fmt.Errorf("gateway: topic %s: %w", t, d.Err)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !create {
		return fmt.Errorf("topic %s does not exist (missing: %s); create it or pass --create-topics", missing[0], strings.Join(missing, ", "))
	}
	if partitions <= 0 {
		partitions = -1
	}
	resp, err := adm.CreateTopics(ctx, partitions, -1, nil, missing...)
	if err != nil {
		return fmt.Errorf("gateway: create topics: %w", err)
	}
	for _, r := range resp.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("gateway: create topic %s: %w", r.Topic, r.Err)
		}
	}
	return nil
}
