package processor

// NotReady is the error of Ready: the class of what is not ready, and the
// cause. /readyz sends the class ("batches", "group", "redis", "kafka"), a
// short, stable word; the cause carries addresses and the text of Redis
// and Kafka errors, so it is logged, never sent.
type NotReady struct {
	Class string
	Err   error
}

// Classes of NotReady.
const (
	NotReadyBatches = "batches" // batches have been failing for longer than --unready-after
	NotReadyGroup   = "group"   // the consumer group is not joined (yet)
	NotReadyRedis   = "redis"   // Redis does not answer
	NotReadyKafka   = "kafka"   // the brokers do not answer
)

func (e *NotReady) Error() string { return e.Class + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *NotReady) Unwrap() error { return e.Err }

// ReadyClass returns the class (web.ReadyClass).
func (e *NotReady) ReadyClass() string { return e.Class }
