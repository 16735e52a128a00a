package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rostrumhq/rostrum/internal/cli"
)

// checkSentinels asks each Sentinel of the flags, in parallel, for the
// address of the master (SENTINEL GET-MASTER-ADDR-BY-NAME) and prints one
// line. It fails (and returns false) when none names it: a Sentinel that
// does not answer is reported but does not fail the check while another
// one answers, as go-redis then asks that one.
func checkSentinels(ctx context.Context, c *checker, f *runFlags, ro *redis.UniversalOptions) bool {
	// ro holds the Sentinels' addresses and the master's name
	// (cli.Sentinel sets them).
	addrs, master := ro.Addrs, ro.MasterName
	masters := make([]string, len(addrs))
	errs := make([]error, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := redis.NewSentinelClient(&redis.Options{Addr: a, Username: ro.SentinelUsername, Password: ro.SentinelPassword,
				TLSConfig: ro.TLSConfig, Dialer: ro.Dialer, MaxRetries: -1})
			defer sc.Close()
			hp, err := sc.GetMasterAddrByName(ctx, master).Result()
			switch {
			case errors.Is(err, redis.Nil):
				errs[i] = fmt.Errorf("%s: monitors no master named %q", a, master)
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w", a, err)
			case len(hp) != 2:
				errs[i] = fmt.Errorf("%s: unexpected reply %q", a, hp)
			default:
				masters[i] = net.JoinHostPort(hp[0], hp[1])
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	var named []string
	var failed []string
	for i := range addrs {
		if errs[i] != nil {
			failed = append(failed, errs[i].Error())
			continue
		}
		if !seen[masters[i]] {
			seen[masters[i]] = true
			named = append(named, masters[i])
		}
	}
	what := "redis sentinels"
	if len(named) == 0 {
		c.fail(exitRedis, what, cli.ScrubError(f.sec.RedisError(f.redis,
			fmt.Errorf("all sentinels specified in configuration are unreachable: %s", strings.Join(failed, "; "))), f.sec.Secrets()...))
		return false
	}
	msg := fmt.Sprintf("%d of %d answered, master %s at %s", len(addrs)-len(failed), len(addrs), master, strings.Join(named, " and "))
	if len(named) > 1 {
		msg += " (the Sentinels disagree: a failover in progress?)"
	}
	if len(failed) > 0 {
		msg += "; not answering: " + strings.Join(failed, "; ")
	}
	c.ok(what, "%s", cli.ScrubAll(msg, f.sec.Secrets()...))
	return true
}
