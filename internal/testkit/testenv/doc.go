// Package testenv starts the real servers that rostrum's integration tests run
// against: redis-server processes on free loopback ports (StartRedis, a
// three-master Redis Cluster with StartRedisCluster, a primary with a replica
// with StartRedisPair, or a master with replicas and three redis-sentinel
// processes with StartRedisSentinel) and an in-process kfake Kafka cluster
// (StartKafka).
//
// Both can be secured for the security tests: NewCerts writes a throwaway CA
// with server and client certificates; WithRedisTLS and WithACLUser make
// redis-server TLS-only and require AUTH as an ACL user, for one server or
// every node of a cluster (whose bus then uses TLS too); WithKafkaTLS and
// WithSASL do the same for kfake (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512). The
// helpers' own clients (Redis.Client, RedisCluster.Client, Kafka.Client,
// Produce, ReadAll) then connect with those credentials.
//
// Every helper takes the test's testing.TB, fails the test with context when
// something goes wrong, and stops what it started in tb.Cleanup; on Linux a
// server process also dies with the test binary, so a test killed by
// -timeout leaks nothing. Helpers must be called from the test's goroutine.
// Tests assert behaviour, never timings: the clients are tuned for quick
// recovery (kgo.MetadataMinAge 50 ms, a 100 ms minimum group session
// timeout, a 200 ms Redis Cluster slot-map reload) but nothing here promises
// a duration.
//
// Integration tests never use a mock Redis. When redis-server or redis-cli is
// not on PATH the tests fail with InstallHint; they never skip silently.
//
// Built with the "docker" tag and run with ROSTRUM_TEST_DOCKER=1, StartRedis
// and StartKafka start Redis and Redpanda containers through testcontainers-go
// instead, and skip with a message where no Docker engine is reachable. With
// containers, Kill, Restart and the kfake fault-injection helpers (Kafka.Fake,
// Kafka.Fault) skip the test with a message; StartRedisCluster stays local.
// The container code is behind the tag because it pulls in about 350
// packages; CI compiles it with `go vet -tags docker ./...`.
package testenv
