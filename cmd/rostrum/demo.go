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

	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"

	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/examples"
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
func (d *demoFlags) register(fs *flag.FlagSet, f *runFlags) {
	f.register(fs)
	fs.IntVar(&d.kafkaPort, "kafka-port", 9092, "loopback port of the embedded Kafka broker (0: any free port)")
	fs.IntVar(&d.rooms, "rooms", 12, "simulated rooms")
	fs.IntVar(&d.members, "members", 60, "members of the largest simulated rooms")
	fs.Uint64Var(&d.seed, "seed", 1, "seed of the simulated meetings (the same seed plays the same meetings)")
	fs.IntVar(&d.show, "show", 4, "rooms shown in the console view")
	fs.Float64Var(&d.boardRate, "board-rate", 20, "simulated board events (gifts, points, actions, trades) per second; 0: none")
	fs.StringVar(&d.gatewayHTTP, "gateway-http", "127.0.0.1:8081", "listen address of the embedded gateway the simulated meeting POSTs its callbacks to (empty: produce to Kafka directly)")
	fs.IntVar(&d.grayRooms, "gray-rooms", 3, "simulated rooms of the second environment, gray (rooms gray-r-…), sent through the gateway; 0: none")
	fs.DurationVar(&d.hostClicks, "host-clicks", 3*time.Second, "simulated hosts click start/stop recording (sometimes several at once) this often; 0: never")
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

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
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
	if len(f.boards) == 0 {
		// Every seed scenario's board, unless the config file has its own.
		if f.boards, err = parseBoards(examples.BoardsYAML); err != nil {
			return fmt.Errorf("examples/boards.yaml: %w", err)
		}
		f.boardsSource = "examples/boards.yaml"
		if len(f.hints) == 0 { // and its hints, which read those boards
			if f.hints, err = parseHints(examples.BoardsYAML); err != nil {
				return fmt.Errorf("examples/boards.yaml: %w", err)
			}
		}
	}
	// The embedded servers take no credentials: security settings only make
	// sense for servers given with --brokers and --redis.
	switch {
	case f.brokers == "" && f.sec.kafkaSet:
		return errors.New("--kafka-sasl and --kafka-tls* need --brokers: the embedded broker has neither")
	case f.redis == "" && !f.sec.sentinel.on() && f.sec.redisSet:
		return errors.New("--redis-user, --redis-password and --redis-tls* need --redis: the embedded Redis has none of them")
	case f.httpTLS.cert != "" || f.httpTLS.key != "":
		return errors.New("--http-tls-cert and --http-tls-key are for rostrum run: the demo serves its page over plain HTTP")
	}
	kopts, err := f.sec.kafkaOpts()
	if err != nil {
		return err
	}
	topics := processor.TopicsFor(f.topicPrefix, f.env)
	var gwLn net.Listener
	if d.gatewayHTTP != "" {
		// The processor accepts the rooms the gateway routes to its
		// environment, unless told otherwise.
		if !f.routes.given() {
			_ = f.routes.rules.Set(demoRoutes())
			f.routes.def = f.env
		}
		if gwLn, err = net.Listen("tcp", d.gatewayHTTP); err != nil {
			return fmt.Errorf("--gateway-http %s: %w (pass --gateway-http 127.0.0.1:0 for any free port)", d.gatewayHTTP, err)
		}
		defer gwLn.Close()
	}
	if f.brokers == "" {
		// The DLQ and the output are left to --create-topics, which creates
		// them with their settings (the output compacted).
		b, err := demo.StartBroker(d.kafkaPort, append(topics.Inputs(), demoGatewayTopics(f.topicPrefix, f.env)...)...)
		if err != nil {
			return fmt.Errorf("%w (is port %d taken? pass --kafka-port 0)", err, d.kafkaPort)
		}
		defer b.Close()
		f.brokers = b.Addr
	}
	if f.redis == "" && !f.sec.sentinel.on() {
		r, err := demo.StartRedis()
		if err != nil {
			return err
		}
		defer r.Close()
		f.redis = r.Addr
	}
	if f.walDir == "./wal" {
		dir, err := os.MkdirTemp("", "rostrum-demo-wal-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		f.walDir = dir
	}
	f.createTopics = true
	fmt.Fprintf(stdout, `rostrum demo
  Kafka broker  %s   (any Kafka client can connect; e.g. kcat -C -b %s -t %s -o end)
  Redis         %s
  WAL           %s
  input topics  %v
  output topic  %s   DLQ %s
  live page     %s   (metrics at /metrics)
  leaderboards  %s   (%d boards from %s; JSON at /v1/boards)
  gateway       %s
Ctrl-C stops everything.
`, f.brokers, f.brokers, topics.TopN, f.sec.sentinel.target(f.redis), f.walDir, topics.Inputs(), topics.TopN, topics.DLQ, pageURL(f.http),
		boardsURL(f.http), len(f.boards), f.boardsSource, demoGatewayLine(gwLn, f.env))

	g, ctx := errgroup.WithContext(ctx)
	ready := make(chan struct{})
	gwReady := make(chan struct{})
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
		return scrubError(runPipeline(ctx, &f, lg, func(*processor.Processor) { close(ready) }), f.sec.secrets()...)
	})
	g.Go(func() error {
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-gwReady:
		case <-ctx.Done():
			return nil
		}
		return demo.Feed(ctx, demo.FeedConfig{Brokers: splitList(f.brokers), Env: f.env, Rooms: d.rooms, MaxMembers: d.members, Seed: d.seed, KafkaOpts: kopts, Gateway: gwURL})
	})
	if gwURL != "" && d.grayRooms > 0 && f.env != demoGrayEnv {
		g.Go(func() error {
			select {
			case <-gwReady:
			case <-ctx.Done():
				return nil
			}
			return demo.Feed(ctx, demo.FeedConfig{Rooms: d.grayRooms, MaxMembers: d.members, Gateway: gwURL, RoomPrefix: demoGrayEnv + "-"})
		})
	}
	if d.boardRate > 0 {
		g.Go(func() error {
			select {
			case <-ready:
			case <-ctx.Done():
				return nil
			}
			return demo.FeedBoards(ctx, demo.BoardFeedConfig{Brokers: splitList(f.brokers), Env: f.env, Rate: d.boardRate, KafkaOpts: kopts})
		})
	}
	if d.hostClicks > 0 && f.http != "" {
		g.Go(func() error {
			select {
			case <-ready:
			case <-ctx.Done():
				return nil
			}
			return demo.Hosts(ctx, demo.HostsConfig{BaseURL: strings.TrimSuffix(pageURL(f.http), "/"), Every: d.hostClicks})
		})
	}
	g.Go(func() error {
		select {
		case <-ready:
		case <-ctx.Done():
			return nil
		}
		return demo.View(ctx, splitList(f.brokers), topics.TopN, d.show, 2*time.Second, stdout, kopts...)
	})
	err = g.Wait()
	lg.Info("demo stopped", zap.Error(err))
	return err
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
func setDefault(fs *flag.FlagSet, name, v string) {
	if err := fs.Set(name, v); err != nil {
		panic("demo: default of --" + name + ": " + err.Error())
	}
	fs.Lookup(name).DefValue = v
}
