package processor

import "time"

// Observer receives the processor's measurements; the metrics package
// implements it with Prometheus collectors. Calls come from several
// goroutines at once (the Run goroutine, which decodes and appends to the
// WAL; the boards' apply, boards.go; with Config.PipelineBatches, a batch's
// stage-2 goroutine, pipeline.go; the Kafka client's, for Rebalance), so an
// implementation must be safe for concurrent use; calls must not block.
// Topic labels are input topic names; reason is a short class (the field a
// record broke, e.g. "ts", "room_id", "json"), never free text.
type Observer interface {
	Consumed(topic string, records int)
	Applied(topic string, events int)
	DLQ(topic, reason string)
	// Ignored counts events of topic skipped for their unknown type
	// (Config.UnknownTypes); typ is the type as received, which the
	// observer must bound before using it as a label.
	Ignored(topic, typ string, events int)
	Batch(records int, took time.Duration)
	RedisRoundTrip(op string, took time.Duration) // op: "apply", "store", "boards", or "due" (the timer looking for due rooms)
	WALAppend(took time.Duration)
	Published(records int)
	Conflicts(rooms int)
	Retry()
	Rebalance(kind string, partitions int) // kind: "assigned", "revoked" or "lost"
	RedisReset()                           // Redis lost its data and state was rebuilt
	// PublishLatency observes one output record: from the Kafka timestamp
	// of its room's oldest record in the batch to the broker's
	// acknowledgement of the output.
	PublishLatency(took time.Duration)
}

// NopObserver drops every measurement: the default Observer, and a base
// to embed for an observer that watches only some of them.
type NopObserver struct{}

func (NopObserver) Consumed(string, int)                 {}
func (NopObserver) Applied(string, int)                  {}
func (NopObserver) DLQ(string, string)                   {}
func (NopObserver) Ignored(string, string, int)          {}
func (NopObserver) Batch(int, time.Duration)             {}
func (NopObserver) RedisRoundTrip(string, time.Duration) {}
func (NopObserver) WALAppend(time.Duration)              {}
func (NopObserver) Published(int)                        {}
func (NopObserver) Conflicts(int)                        {}
func (NopObserver) Retry()                               {}
func (NopObserver) Rebalance(string, int)                {}
func (NopObserver) RedisReset()                          {}
func (NopObserver) PublishLatency(time.Duration)         {}
