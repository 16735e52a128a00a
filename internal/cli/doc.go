// Package cli is the command-line plumbing that the two commands, rostrum
// (what operators deploy) and rostrum-dev (the benchmarks and the
// simulator), share: the flags of the connections to Kafka and Redis
// (credentials, TLS, SASL, Sentinel) and the clients' options built from
// them (Security), the Secret type that redacts itself everywhere, the old
// names of renamed flags (ParseWithAliases, ResolveAliases), the logger of
// --log-format and --log-level, and the small conversions of flag values
// (SplitList, AckDelay).
//
// It is a package, not a file of cmd/rostrum, because a main package cannot
// be imported and a copy in cmd/rostrum-dev would drift: a benchmark or a
// simulator pointed at a secured cluster must connect exactly as
// `rostrum run` does, and a renamed flag must keep its old name in both.
// It holds no wiring and no business rule: the commands parse, this package
// turns flags into client options, and the packages they call do the work.
// Dependencies point one way: cmd/rostrum and cmd/rostrum-dev import cli;
// cli imports the client libraries (franz-go, go-redis, the AWS SDK for
// MSK IAM) and zap, never a command nor rostrum's own packages.
//
// Invariants: no printed form of a Secret (fmt verbs, JSON, YAML, text,
// zap) holds its value, and every error the package returns names the
// flag at fault and holds no password (ScrubError). Security resolves once;
// RedisOptions and KafkaOpts are the one place a client's credentials and
// TLS are built.
package cli
