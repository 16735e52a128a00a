package demo

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker is an in-process Kafka broker speaking the real protocol, so any
// Kafka client (kcat, franz-go, librdkafka) can connect to Addr.
type Broker struct {
	Addr string
	c    *kfake.Cluster
}

// StartBroker starts a one-broker kfake cluster on 127.0.0.1:port (0: a free
// port) with the given topics of 3 partitions each.
func StartBroker(port int, topics ...string) (*Broker, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(3, topics...)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: start kafka broker: %w", err)
	}
	return &Broker{Addr: c.ListenAddrs()[0], c: c}, nil
}

// Close stops the broker.
func (b *Broker) Close() { b.c.Close() }
