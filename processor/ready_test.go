package processor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

// TestStandbyIsReady runs four processors, with static instance ids, on
// topics of one partition each (three input partitions): once the group is
// joined, one processor holds none and is a standby, and every one of them,
// the standby included, is ready (a Kubernetes rollout must not wait on it).
func TestStandbyIsReady(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, append(topics.Inputs(), topics.DLQ, topics.TopN)...))
	r := testenv.StartRedis(t)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var ps []*processor.Processor
	for i := range 4 {
		store, err := sink.New(r.Client(), sink.Config{Env: env})
		if err != nil {
			t.Fatal(err)
		}
		p, err := processor.New(ctx, processor.Config{Brokers: k.Seeds, Env: env,
			KafkaOpts: testenv.FastGroupOpts(), Group: processor.GroupConfig{InstanceID: "rostrum-" + string(rune('0'+i))}}, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(ctx) }()
	}
	deadline := time.Now().Add(time.Minute)
	for {
		assigned, standbys, ready := 0, 0, 0
		for _, p := range ps {
			assigned += p.Assigned()
			if p.Standby() {
				standbys++
			}
			if p.Ready(ctx) == nil {
				ready++
			}
		}
		if assigned == 3 && standbys == 1 && ready == 4 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %d partitions assigned, %d standbys, %d ready; want 3, 1, 4", assigned, standbys, ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
