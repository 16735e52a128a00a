package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/rostrumhq/rostrum/gateway"
	"github.com/rostrumhq/rostrum/internal/cli"
)

// demoGrayEnv is the second environment of the demo: its rooms start with
// "gray-" and no processor serves it, so its callbacks only land in its
// topics (as a gray release's would, for another consumer).
const demoGrayEnv = "gray"

// demoRoutes are the demo's routes: gray-… rooms to gray, every other room
// (the meeting's r-…, the boards' rooms) to env.
func demoRoutes() string { return demoGrayEnv + "=^" + demoGrayEnv + "-" }

// demoGateway is the gateway inside `rostrum demo`: the same server as
// `rostrum gateway`, on ln, without credentials (it listens on loopback),
// creating the callback topics of both environments.
func demoGateway(ctx context.Context, brokers, prefix, env string, kopts []kgo.Opt, lg *zap.Logger, ln net.Listener, started func(string)) error {
	fs := cli.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f gatewayFlags
	f.register(fs)
	args := []string{"--brokers", brokers, "--topic-prefix", prefix, "--create-topics", "--gateway-insecure",
		"--route", demoRoutes(), "--route-default", env}
	if err := fs.Parse(args); err != nil {
		return err
	}
	return serveGateway(ctx, &f, kopts, lg.Named("gateway").WithOptions(zap.IncreaseLevel(zap.ErrorLevel)), ln, started)
}

// demoGatewayTopics lists the topics the demo's gateway writes.
func demoGatewayTopics(prefix, env string) []string {
	var out []string
	for _, e := range []string{env, demoGrayEnv} {
		for _, s := range gateway.Sources {
			out = append(out, gateway.Topic(prefix, e, s))
		}
	}
	return out
}

// gatewayURL turns a listen address into the base URL to POST to.
func gatewayURL(addr string) string {
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return fmt.Sprintf("http://%s", addr)
}
