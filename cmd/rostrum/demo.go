package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/examples"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/processor"
)

// demoFlags are demo's own flags, beside run's.
type demoFlags struct {
	kafkaPort   int           // default: 9092
	rooms       int           // default: 12
	members     int           // default: 60
	seed        uint64        // default: 1
	show        int           // default: 4
	boardRate   float64       // board events/s; default: 20
	gatewayHTTP string        // default: 127.0.0.1:8081
	grayRooms   int           // default: 3
	hostClicks  time.Duration // default: 3s
}

// register registers run's flags (f) with the demo's defaults, and the
// demo's own flags, into fs.
func (d *demoFlags) register(fs *cli.FlagSet, f *runFlags) {
	f.register(fs)
	fs.Group("command").Tuning().IntVar(&d.kafkaPort, "kafka-port", 9092, "loopback port of the embedded Kafka broker (0: any free port)")
	fs.Group("command").IntVar(&d.rooms, "rooms", 12, "simulated rooms")
	fs.Group("command").IntVar(&d.members, "members", 60, "members of the largest simulated rooms")
	fs.Group("command").Uint64Var(&d.seed, "seed", 1, "seed of the simulated meetings (the same seed plays the same meetings)")
	fs.Group("command").Tuning().IntVar(&d.show, "show", 4, "rooms shown in the console view")
	fs.Group("command").Tuning().Float64Var(&d.boardRate, "board-rate", 20, "simulated board events (gifts, points, actions, trades) per second; 0: none")
	fs.Group("command").StringVar(&d.gatewayHTTP, "gateway-http", "127.0.0.1:8081", "listen address of the embedded gateway the simulated meeting POSTs its callbacks to (empty: produce to Kafka directly)")
	fs.Group("command").Tuning().IntVar(&d.grayRooms, "gray-rooms", 3, "simulated rooms of the second environment, gray (rooms gray-r-…), sent through the gateway; 0: none")
	fs.Group("command").Tuning().DurationVar(&d.hostClicks, "host-clicks", 3*time.Second, "simulated hosts click start/stop recording (sometimes several at once) this often; 0: never")
	// Demo defaults: embedded everything, readable logs, a throwaway WAL.
	// They count as given (so neither ROSTRUM_* variables meant for `run`
	// nor a --config file turn the demo to a real Redis or broker), and
	// -help shows them as the defaults.
	for name, v := range map[string]string{
		"env": "demo", "redis": "", "brokers": "", "log-format": "console", "log-level": "warn",
		"wal-sync":         "none",
		"control-insecure": "true", // the page's start/stop buttons carry no token
	} {
		setDefault(fs, name, v)
	}
}

// cmdDemo runs `rostrum demo`: the real pipeline against an embedded Kafka
// broker and a private Redis (unless --brokers and --redis name others),
// fed by simulated meetings and board events, through an embedded gateway,
// with a console view of the published top lists. Ctrl-C stops it all.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	var d demoFlags
	d.register(fs, &f)
	if err := parseFlags(fs, &f, args); err != nil {
		return err
	}
	lg, err := f.logger(stderr)
	if err != nil {
		return err
	}
	if err := demoBoards(&f); err != nil {
		return err
	}
	if err := checkDemoSecurity(&f); err != nil {
		return err
	}
	kopts, err := f.sec.KafkaOpts()
	if err != nil {
		return err
	}
	srv, err := startDemoServers(&f, &d)
	if err != nil {
		return err
	}
	defer srv.close()
	f.createTopics = true
	printDemoBanner(stdout, &f, srv.gwLn)
	err = runDemo(ctx, &f, &d, kopts, lg, srv.gwLn, stdout)
	lg.Info("demo stopped", zap.Error(err))
	return err
}

// demoBoards gives the demo every seed scenario's board and its hints
// (examples/boards.yaml), unless the config file has boards of its own.
func demoBoards(f *runFlags) error {
	if len(f.boards) > 0 {
		return nil
	}
	var err error
	if f.boards, err = parseBoards(examples.BoardsYAML); err != nil {
		return fmt.Errorf("examples/boards.yaml: %w", err)
	}
	f.boardsSource = "examples/boards.yaml"
	if len(f.hints) == 0 { // the hints read those boards
		if f.hints, err = parseHints(examples.BoardsYAML); err != nil {
			return fmt.Errorf("examples/boards.yaml: %w", err)
		}
	}
	return nil
}

// checkDemoSecurity refuses the security settings the embedded servers
// cannot take: they only make sense for servers given with --brokers and
// --redis.
func checkDemoSecurity(f *runFlags) error {
	switch {
	case f.brokers == "" && f.sec.KafkaSet:
		return errors.New("--kafka-sasl and --kafka-tls* need --brokers: the embedded broker has neither")
	case f.redis == "" && !f.sec.Sentinel.On() && f.sec.RedisSet:
		return errors.New("--redis-user, --redis-password and --redis-tls* need --redis: the embedded Redis has none of them")
	case f.httpTLS.cert != "" || f.httpTLS.key != "":
		return errors.New("--http-tls-cert and --http-tls-key are for rostrum run: the demo serves its page over plain HTTP")
	}
	return nil
}

// demoServers are what the demo starts beside the pipeline: the embedded
// gateway's listener, and unless given by flag the broker, Redis and a
// throwaway WAL directory.
type demoServers struct {
	gwLn    net.Listener // nil when --gateway-http is empty
	cleanup []func()     // in the order started
}

// close stops what was started, the last first.
func (s *demoServers) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// startDemoServers starts the demo's servers and points f at them: the
// brokers, Redis and WAL directory of a flag left at its default become the
// embedded ones. With the gateway on, the processor accepts the rooms the
// gateway routes to its environment, unless told otherwise. On an error,
// what was started is stopped.
func startDemoServers(f *runFlags, d *demoFlags) (_ *demoServers, err error) {
	srv := &demoServers{}
	defer func() {
		if err != nil {
			srv.close()
		}
	}()
	if d.gatewayHTTP != "" {
		// The processor accepts the rooms the gateway routes to its
		// environment, unless told otherwise.
		if !f.routes.given() {
			_ = f.routes.rules.Set(demoRoutes())
			f.routes.def = f.env
		}
		if srv.gwLn, err = net.Listen("tcp", d.gatewayHTTP); err != nil {
			return nil, fmt.Errorf("--gateway-http %s: %w (pass --gateway-http 127.0.0.1:0 for any free port)", d.gatewayHTTP, err)
		}
		srv.cleanup = append(srv.cleanup, func() { _ = srv.gwLn.Close() })
	}
	if f.brokers == "" {
		// The DLQ and the output are left to --create-topics, which creates
		// them with their settings (the output compacted).
		topics := processor.TopicsFor(f.topicPrefix, f.env)
		b, err := demo.StartBroker(d.kafkaPort, append(topics.Inputs(), demoGatewayTopics(f.topicPrefix, f.env)...)...)
		if err != nil {
			return nil, fmt.Errorf("%w (is port %d taken? pass --kafka-port 0)", err, d.kafkaPort)
		}
		srv.cleanup = append(srv.cleanup, b.Close)
		f.brokers = b.Addr
	}
	if f.redis == "" && !f.sec.Sentinel.On() {
		r, err := demo.StartRedis()
		if err != nil {
			return nil, err
		}
		srv.cleanup = append(srv.cleanup, r.Close)
		f.redis = r.Addr
	}
	if f.walDir == "./wal" {
		dir, err := os.MkdirTemp("", "rostrum-demo-wal-")
		if err != nil {
			return nil, err
		}
		srv.cleanup = append(srv.cleanup, func() { _ = os.RemoveAll(dir) })
		f.walDir = dir
	}
	return srv, nil
}

// printDemoBanner prints where everything the demo started is.
func printDemoBanner(w io.Writer, f *runFlags, gwLn net.Listener) {
	topics := processor.TopicsFor(f.topicPrefix, f.env)
	fmt.Fprintf(w, `rostrum demo
  Kafka broker  %s   (any Kafka client can connect; e.g. kcat -C -b %s -t %s -o end)
  Redis         %s
  WAL           %s
  input topics  %v
  output topic  %s   DLQ %s
  live page     %s   (metrics at /metrics)
  leaderboards  %s   (%d boards from %s; JSON at /v1/boards)
  gateway       %s
Ctrl-C stops everything.
`, f.brokers, f.brokers, topics.TopN, f.sec.Sentinel.Target(f.redis), f.walDir, topics.Inputs(), topics.TopN, topics.DLQ, pageURL(f.http),
		boardsURL(f.http), len(f.boards), f.boardsSource, demoGatewayLine(gwLn, f.env))
}

// runDemo runs the pipeline, the embedded gateway (on gwLn, if not nil),
// the simulated meetings, board events and hosts, and the console view,
// until ctx ends or one of them fails. The feeders and the view start once
// the processor runs (and the meetings once the gateway listens).
func runDemo(ctx context.Context, f *runFlags, d *demoFlags, kopts []kgo.Opt, lg *zap.Logger, gwLn net.Listener, stdout io.Writer) error {
	g, ctx := errgroup.WithContext(ctx)
	ready := make(chan struct{})   // closed when the processor runs
	gwReady := make(chan struct{}) // closed when the gateway listens, or at once without one
	gwURL := ""
	if gwLn != nil {
		gwURL = gatewayURL(gwLn.Addr().String())
		g.Go(func() error {
			return demoGateway(ctx, f.brokers, f.topicPrefix, f.env, kopts, lg, gwLn, func(string) { close(gwReady) })
		})
	} else {
		close(gwReady)
	}
	g.Go(func() error {
		return cli.ScrubError(runProcessor(ctx, f, lg, func(*processor.Processor) { close(ready) }), f.sec.Secrets()...)
	})
	// after runs run in g once every channel is closed; not at all when
	// ctx ends first.
	after := func(run func() error, chans ...chan struct{}) {
		g.Go(func() error {
			for _, c := range chans {
				select {
				case <-c:
				case <-ctx.Done():
					return nil
				}
			}
			return run()
		})
	}
	brokers := cli.SplitList(f.brokers)
	after(func() error {
		return demo.Feed(ctx, demo.FeedConfig{Brokers: brokers, Env: f.env, Rooms: d.rooms, MaxMembers: d.members, Seed: d.seed, KafkaOpts: kopts, Gateway: gwURL})
	}, ready, gwReady)
	if gwURL != "" && d.grayRooms > 0 && f.env != demoGrayEnv {
		after(func() error {
			return demo.Feed(ctx, demo.FeedConfig{Rooms: d.grayRooms, MaxMembers: d.members, Gateway: gwURL, RoomPrefix: demoGrayEnv + "-"})
		}, gwReady)
	}
	if d.boardRate > 0 {
		after(func() error {
			return demo.FeedBoards(ctx, demo.BoardFeedConfig{Brokers: brokers, Env: f.env, Rate: d.boardRate, KafkaOpts: kopts})
		}, ready)
	}
	if d.hostClicks > 0 && f.http != "" {
		after(func() error {
			return demo.Hosts(ctx, demo.HostsConfig{BaseURL: strings.TrimSuffix(pageURL(f.http), "/"), Every: d.hostClicks})
		}, ready)
	}
	topN := processor.TopicsFor(f.topicPrefix, f.env).TopN
	after(func() error { return demo.View(ctx, brokers, topN, d.show, 2*time.Second, stdout, kopts...) }, ready)
	return g.Wait()
}

// boardsURL is the leaderboards page under the --http listen address.
func boardsURL(addr string) string {
	if addr == "" {
		return "(off: --http is empty)"
	}
	return pageURL(addr) + "static/boards.html"
}

// pageURL turns the --http listen address into a URL to open.
func pageURL(addr string) string {
	if addr == "" {
		return "(off: --http is empty)"
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	return "http://" + addr + "/"
}

// demoGatewayLine describes the embedded gateway for the banner.
func demoGatewayLine(ln net.Listener, env string) string {
	if ln == nil {
		return "(off: --gateway-http is empty; the meeting is produced to Kafka directly)"
	}
	return fmt.Sprintf("%s/v1/callbacks/{rtc|client|signal}   (the simulated meeting POSTs here; rooms %s-… go to %s, the rest to %s)",
		gatewayURL(ln.Addr().String()), demoGrayEnv, demoGrayEnv, env)
}

// setDefault sets fs's flag name to v, as given on the command line, and
// makes v the default -help prints.
func setDefault(fs *cli.FlagSet, name, v string) {
	if err := fs.Set(name, v); err != nil {
		panic("demo: default of --" + name + ": " + err.Error())
	}
	fs.Lookup(name).DefValue = v
}
