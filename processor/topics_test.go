package processor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/rostrumhq/rostrum/internal/testkit/testenv"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

// TestCreateTopicsSettings starts a processor with CreateTopics on an empty
// kfake cluster and checks what the brokers then report: every topic with
// its partition count, the output compacted (it was created without
// cleanup.policy before), the DLQ with its long retention. kfake answers
// DescribeConfigs with the configs set at creation, as Kafka does.
func TestCreateTopicsSettings(t *testing.T) {
	k := testenv.StartKafka(t)
	r := testenv.StartRedis(t)
	store, err := sink.New(r.Client(), sink.Config{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	cfg := processor.Config{Brokers: k.Seeds, Env: env,
		TopicSetup: processor.TopicSetup{Create: true, Partitions: 4, OutputPartitions: 2, DLQRetention: 90 * 24 * time.Hour}}
	p, err := processor.New(context.Background(), cfg, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancelled, cancel := context.WithCancel(context.Background()); cancel(); _ = p.Run(cancelled) })

	specs := cfg.TopicSpecs()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	states, err := processor.DescribeTopics(context.Background(), k.Admin(), names...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		partitions int
		compacted  bool
		retention  string
	}{
		env + ".callbacks.rtc":    {4, false, ""},
		env + ".callbacks.client": {4, false, ""},
		env + ".callbacks.signal": {4, false, ""},
		env + ".callbacks.dlq":    {4, false, "7776000000"},
		env + ".ranking.topn":     {2, true, ""},
	}
	for _, st := range states {
		w := want[st.Name]
		if !st.Exists || st.Err != nil || st.Partitions != w.partitions || st.Compacted() != w.compacted {
			t.Errorf("%s: exists %v, %d partitions, compacted %v, err %v; want %d partitions, compacted %v",
				st.Name, st.Exists, st.Partitions, st.Compacted(), st.Err, w.partitions, w.compacted)
		}
		if w.retention != "" && st.Configs["retention.ms"] != w.retention {
			t.Errorf("%s: retention.ms %q, want %q", st.Name, st.Configs["retention.ms"], w.retention)
		}
	}
	if err := processor.CheckOutputCompacted(context.Background(), k.Admin(), specs); err != nil {
		t.Errorf("CheckOutputCompacted after creation: %v", err)
	}
}

// TestCheckOutputCompacted refuses an output topic created without
// compaction and accepts one with compact,delete.
func TestCheckOutputCompacted(t *testing.T) {
	topics := processor.TopicsFor("", env)
	k := testenv.StartKafka(t, testenv.WithTopics(1, topics.TopN))
	specs := processor.Config{Brokers: k.Seeds, Env: env}.TopicSpecs()
	err := processor.CheckOutputCompacted(context.Background(), k.Admin(), specs)
	if !errors.Is(err, processor.ErrUncompactedOutput) {
		t.Fatalf("uncompacted output: %v, want ErrUncompactedOutput", err)
	}
	policy := "compact,delete"
	resp, err := k.Admin().AlterTopicConfigs(context.Background(),
		[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: &policy}}, topics.TopN)
	if err == nil {
		_, err = resp.On(topics.TopN, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := processor.CheckOutputCompacted(context.Background(), k.Admin(), specs); err != nil {
		t.Errorf("compact,delete: %v", err)
	}
}
