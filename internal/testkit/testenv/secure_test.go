package testenv

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRedisACLAndTLS checks that a server started WithACLUser and
// WithRedisTLS refuses what lacks either and serves what has both, also
// after a restart.
func TestRedisACLAndTLS(t *testing.T) {
	certs := NewCerts(t)
	r := StartRedis(t, WithACLUser("app", "s3cret pass"), WithRedisTLS(certs, true))
	ctx := context.Background()
	c := r.Client()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	who, err := c.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil || who != "app" {
		t.Fatalf("ACL WHOAMI = %q, %v; want app", who, err)
	}

	noAuth := r.Options()
	noAuth.Username, noAuth.Password = "", ""
	if err := ping(noAuth); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("without AUTH: %v; want NOAUTH", err)
	}
	plain := r.Options()
	plain.TLSConfig = nil
	if err := ping(plain); err == nil {
		t.Error("plain TCP to the TLS port worked; want an error")
	}
	noCert := r.Options()
	noCert.TLSConfig.Certificates = nil
	if err := ping(noCert); err == nil {
		t.Error("TLS without a client certificate worked; want it refused (mutual TLS)")
	}

	r.Restart(true)
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after restart: %q, %v", got, err)
	}
}

func ping(o *redis.Options) error {
	o.MaxRetries = -1
	c := redis.NewClient(o)
	defer c.Close()
	return c.Ping(context.Background()).Err()
}

// TestKafkaSASLAndTLS checks that kfake started WithSASL and WithKafkaTLS
// accepts testenv's own clients and each configured mechanism.
func TestKafkaSASLAndTLS(t *testing.T) {
	certs := NewCerts(t)
	k := StartKafka(t, WithTopics(1, "t"), WithKafkaTLS(certs, true),
		WithSASL("SCRAM-SHA-512", "u512", "p512"), WithSASL("PLAIN", "uplain", "pplain"), WithSASL("SCRAM-SHA-256", "u256", "p256"))
	k.Produce("t", []byte("k"), []byte("v"))
	if got := k.ReadAll("t"); len(got) != 1 || string(got[0].Value) != "v" {
		t.Fatalf("ReadAll = %v", got)
	}
	for _, u := range []saslUser{{"PLAIN", "uplain", "pplain"}, {"SCRAM-SHA-256", "u256", "p256"}, {"SCRAM-SHA-512", "u512", "p512"}} {
		cl := as(t, k, certs, u)
		// Ping only sends ApiVersions, which needs no authentication.
		if _, err := kadm.NewClient(cl).ListTopics(context.Background()); err != nil {
			t.Errorf("%s: %v", u.mechanism, err)
		}
		bad := as(t, k, certs, saslUser{u.mechanism, u.user, "wrong"})
		if _, err := kadm.NewClient(bad).ListTopics(context.Background()); err == nil {
			t.Errorf("%s with a wrong password: no error", u.mechanism)
		}
	}
}

// as returns a client authenticating as u only: Kafka.Client's options
// would add the first user's mechanism, which kgo tries first.
func as(t *testing.T, k *Kafka, certs *Certs, u saslUser) *kgo.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Seeds...), kgo.DialTLSConfig(certs.ClientConfig()),
		kgo.SASL(saslMechanism(t, u)), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
