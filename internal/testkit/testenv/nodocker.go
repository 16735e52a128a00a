//go:build !docker

package testenv

import "testing"

// dockerRedis is replaced by a container-backed Redis in builds with the
// docker tag; here Redis is always a local redis-server.
func dockerRedis(testing.TB) (string, bool) { return "", false }

// dockerKafka is replaced by a container-backed Kafka in builds with the
// docker tag; here Kafka is always an in-process kfake cluster.
func dockerKafka(testing.TB) ([]string, bool) { return nil, false }
