//go:build docker

package testenv

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
	"github.com/testcontainers/testcontainers-go/modules/redpanda"
)

const (
	// dockerEnv names the environment variable that, set to 1 in a build
	// with the docker tag, makes StartRedis and StartKafka use containers.
	dockerEnv = "ROSTRUM_TEST_DOCKER"

	redisImage    = "redis:7.0"
	redpandaImage = "docker.redpanda.com/redpandadata/redpanda:v25.2.4"

	// containerTimeout bounds pulling and starting one container.
	containerTimeout = 5 * time.Minute
)

func dockerEnabled() bool { return os.Getenv(dockerEnv) == "1" }

// requireDocker skips the test with a message when no Docker engine is
// reachable to run what.
func requireDocker(tb testing.TB, what string) {
	tb.Helper()
	tb.Logf("testenv: %s=1: running %s in a container", dockerEnv, what)
	if t, ok := tb.(*testing.T); ok {
		testcontainers.SkipIfProviderIsNotHealthy(t)
		return
	}
	// Benchmarks and fuzz targets: the same check, which testcontainers
	// only offers for *testing.T.
	defer func() {
		if r := recover(); r != nil {
			tb.Skipf("testenv: no Docker engine reachable (%v)", r)
		}
	}()
	p, err := testcontainers.ProviderDocker.GetProvider()
	if err == nil {
		defer p.Close()
		err = p.Health(context.Background())
	}
	if err != nil {
		tb.Skipf("testenv: no Docker engine reachable: %v", err)
	}
}

// dockerRedis starts a Redis container, removed when the test ends, and
// returns its host:port and true, when ROSTRUM_TEST_DOCKER=1; it skips the
// test when no Docker engine is reachable. Otherwise it returns "", false.
func dockerRedis(tb testing.TB) (string, bool) {
	tb.Helper()
	if !dockerEnabled() {
		return "", false
	}
	requireDocker(tb, redisImage)
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	c, err := tcredis.Run(ctx, redisImage)
	testcontainers.CleanupContainer(tb, c)
	if err != nil {
		tb.Fatalf("testenv: start %s container: %v", redisImage, err)
	}
	addr, err := c.PortEndpoint(ctx, "6379/tcp", "")
	if err != nil {
		tb.Fatalf("testenv: address of %s container: %v", redisImage, err)
	}
	return addr, true
}

// dockerKafka starts a single-broker Redpanda container, removed when the
// test ends, and returns its seed broker and true, when
// ROSTRUM_TEST_DOCKER=1; it skips the test when no Docker engine is
// reachable. Otherwise it returns nil, false.
func dockerKafka(tb testing.TB) ([]string, bool) {
	tb.Helper()
	if !dockerEnabled() {
		return nil, false
	}
	requireDocker(tb, redpandaImage)
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	c, err := redpanda.Run(ctx, redpandaImage)
	testcontainers.CleanupContainer(tb, c)
	if err != nil {
		tb.Fatalf("testenv: start %s container: %v", redpandaImage, err)
	}
	seed, err := c.KafkaSeedBroker(ctx)
	if err != nil {
		tb.Fatalf("testenv: seed broker of %s container: %v", redpandaImage, err)
	}
	return []string{seed}, true
}
