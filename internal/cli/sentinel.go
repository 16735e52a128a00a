package cli

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Redis rostrum connects to is one of three topologies (docs/DESIGN.md
// §7 "Topologies"), chosen by flags and built into a client in one place,
// Security.RedisOptions, for every command that talks to Redis (run,
// check, demo, wal replay, boards prune, and rostrum-dev bench):
//
//	--redis ADDR                    one node
//	--redis A,B,C                   the seeds of a Redis Cluster
//	--redis-sentinel-master NAME    the master that these Sentinels name,
//	  --redis-sentinels A,B,C       followed through failovers
//
// --redis and the Sentinel flags are exclusive. A Sentinel-managed master is
// a single node to rostrum: go-redis's failover client is a *redis.Client
// whose connections dial the address the Sentinels give, so the sink's
// multi-room script calls, the control service's WAIT and every check that
// holds on one node hold through Sentinel too.

// Sentinel are the settings of a Sentinel-managed Redis.
//
// The Sentinels are dialled with the same TLS settings (--redis-tls-*) as
// the data nodes: go-redis's failover client has one TLS configuration for
// both. Their credentials are their own (Sentinel's requirepass, or an ACL
// user of the Sentinels), apart from the data nodes' --redis-user and
// --redis-password.
type Sentinel struct {
	master       string // --redis-sentinel-master; default none (no Sentinel)
	addrs        string // --redis-sentinels, comma-separated host:port
	user         string // --redis-sentinel-user; default none (requirepass or no AUTH)
	password     Secret
	passwordFile string

	fs   *flag.FlagSet // to tell whether --redis was given
	pass Secret        // from --redis-sentinel-password or its file (resolve)
}

func (s *Sentinel) register(fs *FlagSet) {
	s.fs = fs.FlagSet
	fs.Group("redis").StringVar(&s.master, "redis-sentinel-master", "", "name of the Redis master that the Sentinels of --redis-sentinels monitor; rostrum follows it through failovers (exclusive with --redis)")
	fs.Group("redis").StringVar(&s.addrs, "redis-sentinels", "", "Redis Sentinel addresses, comma-separated host:port, with --redis-sentinel-master (TLS and the data nodes' credentials as with --redis)")
	fs.Group("redis").Tuning().StringVar(&s.user, "redis-sentinel-user", "", "ACL user to AUTH as to the Sentinels (needs a Sentinel password)")
	fs.Group("redis").Tuning().Var(&s.password, "redis-sentinel-password", "password of the Sentinels (their requirepass, or of --redis-sentinel-user); prefer --redis-sentinel-password-file or ROSTRUM_REDIS_SENTINEL_PASSWORD")
	fs.Group("redis").Tuning().StringVar(&s.passwordFile, "redis-sentinel-password-file", "", "file holding the Sentinels' password (one line)")
}

// On reports whether Redis is reached through Sentinel.
func (s *Sentinel) On() bool { return s.master != "" || s.addrs != "" }

// redisGiven reports whether --redis was given a non-empty value on the
// command line, in the environment or in the config file (all of them set
// the flag, so flag.Visit sees it; its default does not count).
func (s *Sentinel) redisGiven() bool {
	given := false
	if s.fs != nil {
		s.fs.Visit(func(f *flag.Flag) { given = given || f.Name == "redis" && f.Value.String() != "" })
	}
	return given
}

// resolve validates the Sentinel settings and reads the password file.
// Errors name the flags.
func (s *Sentinel) resolve(sec *Security) error {
	var err error
	if s.pass, err = sec.password("redis-sentinel", s.password, s.passwordFile); err != nil {
		return err
	}
	if !s.On() {
		if s.user != "" || s.pass.IsSet() {
			return errors.New("--redis-sentinel-user and --redis-sentinel-password need --redis-sentinel-master and --redis-sentinels")
		}
		return nil
	}
	switch {
	case s.redisGiven():
		return errors.New("--redis and --redis-sentinel-master/--redis-sentinels are exclusive: give --redis for one node or a Redis Cluster, or the Sentinel flags for a Sentinel-managed master")
	case s.master == "":
		return errors.New("--redis-sentinel-master is required with --redis-sentinels: the name of the master the Sentinels monitor")
	case len(SplitList(s.addrs)) == 0:
		return errors.New("--redis-sentinels is required with --redis-sentinel-master: the Sentinels' host:port, comma-separated")
	case s.user != "" && !s.pass.IsSet():
		return fmt.Errorf("--redis-sentinel-user %q needs --redis-sentinel-password or --redis-sentinel-password-file", s.user)
	}
	for _, a := range SplitList(s.addrs) {
		if i := strings.LastIndexByte(a, ':'); i <= 0 || i == len(a)-1 {
			return fmt.Errorf("--redis-sentinels: %q is not host:port", a)
		}
	}
	return nil
}

// apply turns o (the options of --redis) into those of a failover client of
// the master the Sentinels name: NewUniversalClient then returns a
// *redis.Client that asks the Sentinels for the master's address on every
// dial and drops its connections to an old master at a switch.
func (s *Sentinel) apply(o *redis.UniversalOptions) {
	o.MasterName = s.master
	o.Addrs = SplitList(s.addrs)
	o.SentinelUsername = s.user
	o.SentinelPassword = s.pass.Reveal()
}

// Target names the Redis the flags reach, for messages: addr (--redis), or
// the master and its Sentinels.
func (s *Sentinel) Target(addr string) string {
	if !s.On() {
		return addr
	}
	return fmt.Sprintf("master %s (Sentinels %s)", s.master, strings.Join(SplitList(s.addrs), ","))
}

// description says how the Sentinels are reached, without secrets.
func (s *Sentinel) description() string {
	switch {
	case s.user != "":
		return fmt.Sprintf("Sentinels as user %q", s.user)
	case s.pass.IsSet():
		return "Sentinels with a password"
	}
	return "Sentinels without AUTH"
}
