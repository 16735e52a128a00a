package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/demo"
	"github.com/rostrumhq/rostrum/gateway"
)

// GatewayConfig configures `rostrum-dev bench --workload gateway`: the
// gateway driven over real HTTP, beside a raw franz-go producer writing the
// same records, in the same run and on the same broker.
type GatewayConfig struct {
	Requests    int           // single-object callbacks per flat-out run; default 200000
	Connections int           // keep-alive HTTP connections (and concurrent raw producers); default 64
	Rate        float64       // requests/s of the fixed-rate run; 0: half the gateway's flat-out rate
	RateFor     time.Duration // length of the fixed-rate run; default 10s
	Brokers     []string      // empty: an in-process kfake broker
	KafkaOpts   []kgo.Opt     // TLS, SASL: this process's clients'
	Progress    io.Writer     // nil: none

	// InProcess runs the gateway in this process, where its CPU and
	// allocations are mixed with those of the HTTP clients (and the
	// broker). By default it runs in a child process, this binary
	// re-executed (GatewayChildEnv), so that its own cost is measured.
	InProcess bool
	// ChildKafkaArgs are the --kafka-* flags that give the child the
	// KafkaOpts (it cannot be handed kgo options); ChildEnv is added to
	// its environment, for the password, which must never be an argument.
	// The child's main turns them into options (GatewayChildMain).
	ChildKafkaArgs []string
	ChildEnv       []string
	// ChildProfileDir, when set, is where the child writes its CPU and
	// allocation profiles (GatewayChild.ProfileDir).
	ChildProfileDir string
}

// GatewayResult is one row of the gateway report. Per request means per
// request (or record) of the mode, over the mode's measured window.
type GatewayResult struct {
	Mode           string  `json:"mode"`
	Requests       int64   `json:"requests"`
	Records        int64   `json:"records"`
	Seconds        float64 `json:"seconds"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	RecordsPerSec  float64 `json:"records_per_sec"`
	// AllocsPerReq, BytesPerReq (heap allocations and bytes) and
	// CPUPerReqUS (user + system) are the benchmark process's: the HTTP
	// clients, the raw producer's client and, when Embedded, the broker;
	// the gateway too when it runs in process (GatewayReport.InProcess).
	AllocsPerReq float64 `json:"allocs_per_request"`
	BytesPerReq  float64 `json:"alloc_bytes_per_request"`
	CPUPerReqUS  float64 `json:"cpu_us_per_request"`
	// GatewayAllocsPerReq, GatewayBytesPerReq and GatewayCPUPerReqUS are
	// the gateway child process's own: its HTTP server, the gateway and
	// its franz-go producer. Absent for the raw producer's modes and when
	// the gateway runs in process.
	GatewayAllocsPerReq float64  `json:"gateway_allocs_per_request,omitempty"`
	GatewayBytesPerReq  float64  `json:"gateway_alloc_bytes_per_request,omitempty"`
	GatewayCPUPerReqUS  float64  `json:"gateway_cpu_us_per_request,omitempty"`
	Latency             *Latency `json:"latency_ms,omitempty"`
	Errors              int64    `json:"errors"`
}

// GatewayReport is the outcome of RunGateway.
type GatewayReport struct {
	Embedded    bool            `json:"embedded_broker"`
	InProcess   bool            `json:"gateway_in_process"` // false: in a child process, measured on its own
	Connections int             `json:"connections"`
	RecordBytes int             `json:"record_bytes"`
	Results     []GatewayResult `json:"results"`
}

const benchTopic = "bench.callbacks.rtc"

// RunGateway runs, in order: the raw producer flat out (asynchronous, as
// a producer that batches freely writes), the raw producer with one
// synchronous produce per record from Connections goroutines (what the
// gateway does for each request), the gateway flat out over Connections
// keep-alive connections, and the gateway at a fixed rate (default: half
// its flat-out rate) with latency measured from each request's scheduled
// send time (so a stall is not hidden by requests that were never sent).
//
// The gateway runs in a child process (GatewayChildMain) unless
// cfg.InProcess; the child is asked for its allocations and CPU time just
// before and just after each gateway mode, and stopped before RunGateway
// returns. An error names the child's failure and holds its stderr.
func RunGateway(ctx context.Context, cfg GatewayConfig) (rep *GatewayReport, err error) {
	if cfg.Requests <= 0 {
		cfg.Requests = 200_000
	}
	if cfg.Connections <= 0 {
		cfg.Connections = 64
	}
	if cfg.RateFor == 0 {
		cfg.RateFor = 10 * time.Second
	}
	progress := func(format string, a ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench gateway: "+format+"\n", a...)
		}
	}
	rep = &GatewayReport{Connections: cfg.Connections, InProcess: cfg.InProcess}
	brokers := cfg.Brokers
	if len(brokers) == 0 {
		b, err := demo.StartBroker(0, benchTopic)
		if err != nil {
			return nil, err
		}
		defer b.Close()
		brokers, rep.Embedded = []string{b.Addr}, true
	}
	conn := append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, cfg.KafkaOpts...)
	opts := append(conn[:len(conn):len(conn)], gateway.ProducerOpts(gateway.DefaultProduceTimeout, gateway.DefaultMaxBodyBytes)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := gateway.EnsureTopics(ctx, cl, []string{benchTopic}, true, 3); err != nil {
		return nil, err
	}

	// The records: small single-object callbacks of 1000 rooms.
	bodies := make([][]byte, cfg.Requests)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"room_id":"b-r-%d","user_id":"u-%d","type":"volume","value":%d,"ts":%d}`,
			i%1000, i%5000, i%1000, 1763700000000+int64(i))
	}
	rep.RecordBytes = len(bodies[0])

	// Raw producer, asynchronous.
	progress("raw producer, asynchronous, %d records", len(bodies))
	m, _ := startMeter(nil) // without a child, neither it nor result fails
	var wg sync.WaitGroup
	var rawErrs atomic.Int64
	for i, b := range bodies {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: benchTopic, Key: roomKey(i), Value: b}, func(_ *kgo.Record, err error) {
			if err != nil {
				rawErrs.Add(1)
			}
			wg.Done()
		})
	}
	wg.Wait()
	r, _ := m.result("raw producer, async", int64(len(bodies)), int64(len(bodies)), rawErrs.Load())
	rep.Results = append(rep.Results, r)

	// Raw producer, synchronous per record, Connections at once.
	progress("raw producer, one synchronous produce per record, %d goroutines", cfg.Connections)
	var next atomic.Int64
	rawErrs.Store(0)
	m, _ = startMeter(nil)
	for range cfg.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(bodies); i = int(next.Add(1) - 1) {
				if err := cl.ProduceSync(ctx, &kgo.Record{Topic: benchTopic, Key: roomKey(i), Value: bodies[i]}).FirstErr(); err != nil {
					rawErrs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	r, _ = m.result("raw producer, sync ×"+strconv.Itoa(cfg.Connections), int64(len(bodies)), int64(len(bodies)), rawErrs.Load())
	rep.Results = append(rep.Results, r)

	// The gateway, on a loopback listener, with a client of its own: in
	// a child process, or in this one.
	var addr string
	var child *gatewayProc
	if cfg.InProcess {
		gw, gcl, err := newBenchGateway(conn, 4*cfg.Connections)
		if err != nil {
			return nil, err
		}
		defer gcl.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		srvCtx, stopSrv := context.WithCancel(ctx)
		defer stopSrv()
		go func() { _ = gw.Serve(srvCtx, ln, nil) }()
		addr = ln.Addr().String()
	} else {
		progress("starting the gateway in a child process")
		child, err = startGatewayChild(GatewayChild{Brokers: brokers, MaxInflight: 4 * cfg.Connections, KafkaArgs: cfg.ChildKafkaArgs,
			ProfileDir: cfg.ChildProfileDir}, cfg.ChildEnv)
		if err != nil {
			return nil, err
		}
		defer func() {
			if cerr := child.close(); cerr != nil && err == nil {
				rep, err = nil, cerr
			}
		}()
		addr = child.addr
	}
	url := "http://" + addr + gateway.CallbackPath + "rtc"
	tr := &http.Transport{MaxIdleConns: 4 * cfg.Connections, MaxIdleConnsPerHost: 4 * cfg.Connections, MaxConnsPerHost: 4 * cfg.Connections, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	post := func(b []byte) bool {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusAccepted
	}

	progress("gateway flat out, %d requests over %d keep-alive connections", len(bodies), cfg.Connections)
	var gwErrs atomic.Int64
	next.Store(0)
	if m, err = startMeter(child); err != nil {
		return nil, err
	}
	for range cfg.Connections {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(bodies); i = int(next.Add(1) - 1) {
				if !post(bodies[i]) {
					gwErrs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	flat, err := m.result("gateway, flat out", int64(len(bodies)), int64(len(bodies)), gwErrs.Load())
	if err != nil {
		return nil, err
	}
	rep.Results = append(rep.Results, flat)

	rate := cfg.Rate
	if rate <= 0 {
		rate = flat.RequestsPerSec / 2
	}
	if cfg.RateFor > 0 && rate > 0 {
		progress("gateway at %.0f requests/s for %s", rate, cfg.RateFor)
		n := int(rate * cfg.RateFor.Seconds())
		lat := make([]int64, n) // µs from the scheduled send time
		gwErrs.Store(0)
		interval := time.Duration(float64(time.Second) / rate)
		tickets := make(chan int, 1024)
		if m, err = startMeter(child); err != nil {
			return nil, err
		}
		start := time.Now()
		// One worker per connection, as in the flat-out run: more workers
		// only add goroutines that compete with the gateway and the broker
		// for this process's CPUs and wake up late.
		for range cfg.Connections {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range tickets {
					due := start.Add(time.Duration(i) * interval)
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
					if !post(bodies[i%len(bodies)]) {
						gwErrs.Add(1)
					}
					lat[i] = time.Since(due).Microseconds()
				}
			}()
		}
		for i := 0; i < n && ctx.Err() == nil; i++ {
			if d := time.Until(start.Add(time.Duration(i)*interval)) - 50*time.Millisecond; d > 0 {
				time.Sleep(d) // hand out tickets shortly before they are due
			}
			tickets <- i
		}
		close(tickets)
		wg.Wait()
		r, err := m.result(fmt.Sprintf("gateway at %.0f req/s", rate), int64(n), int64(n), gwErrs.Load())
		if err != nil {
			return nil, err
		}
		if l := latencyOf(lat); l != nil {
			r.Latency = &Latency{Samples: l.Samples, P50: l.P50 / 1000, P99: l.P99 / 1000, P999: l.P999 / 1000, Max: l.Max / 1000}
		}
		rep.Results = append(rep.Results, r)
	}
	return rep, nil
}

func roomKey(i int) []byte { return []byte("b-r-" + strconv.Itoa(i%1000)) }

// gwMeter measures wall time, this process's CPU time and allocations
// and, with a gateway child, the child's.
type gwMeter struct {
	start           time.Time
	cpu             time.Duration
	mallocs, allocd uint64
	child           *gatewayProc // nil: none
	childStart      childStats
}

// startMeter starts a measured window; child, when not nil, is asked for
// its counters first, so that its window holds this process's.
func startMeter(child *gatewayProc) (gwMeter, error) {
	m := gwMeter{child: child}
	if child != nil {
		var err error
		if m.childStart, err = child.stats(); err != nil {
			return m, err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.start, m.cpu, m.mallocs, m.allocd = time.Now(), cpuTime(), ms.Mallocs, ms.TotalAlloc
	return m, nil
}

// result ends the window; its error is the child's.
func (m gwMeter) result(mode string, requests, records, errs int64) (GatewayResult, error) {
	secs := time.Since(m.start).Seconds()
	cpu := cpuTime()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := float64(max(requests, 1))
	res := GatewayResult{
		Mode: mode, Requests: requests, Records: records, Seconds: secs,
		RequestsPerSec: float64(requests) / secs, RecordsPerSec: float64(records) / secs,
		AllocsPerReq: float64(ms.Mallocs-m.mallocs) / r, BytesPerReq: float64(ms.TotalAlloc-m.allocd) / r,
		CPUPerReqUS: float64((cpu - m.cpu).Microseconds()) / r, Errors: errs,
	}
	if m.child != nil {
		end, err := m.child.stats()
		if err != nil {
			return res, err
		}
		res.GatewayAllocsPerReq = float64(end.Mallocs-m.childStart.Mallocs) / r
		res.GatewayBytesPerReq = float64(end.TotalAlloc-m.childStart.TotalAlloc) / r
		res.GatewayCPUPerReqUS = float64(end.CPUNanos-m.childStart.CPUNanos) / 1e3 / r
	}
	return res, nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// WriteTable prints the report as a table.
func (r *GatewayReport) WriteTable(w io.Writer) error {
	where := "a broker given by --brokers"
	if r.Embedded {
		where = "the in-process kfake broker (its CPU and allocations count in this process's)"
	}
	fmt.Fprintf(w, "gateway benchmark: single-object callbacks of %d B, acks=all, idempotent producer, %d keep-alive connections; Kafka: %s\n",
		r.RecordBytes, r.Connections, where)
	broker := map[bool]string{true: ", broker", false: ""}[r.Embedded]
	if r.InProcess {
		fmt.Fprintf(w, "allocs/req, B/req and CPU µs/req are this whole process's (HTTP clients, gateway, producers%s); the gateway runs in it\n\n", broker)
	} else {
		fmt.Fprintf(w, "allocs/req, B/req and CPU µs/req are this process's (HTTP clients, raw producer%s); gw allocs/req, gw B/req and gw CPU µs/req\n"+
			"are the gateway's own process's (its HTTP server, the gateway, its producer), measured over the same window\n\n", broker)
	}
	fmt.Fprintf(w, "%-28s %10s %10s %9s %9s %9s %10s %10s %10s %13s %10s %13s %7s\n", "mode", "requests/s", "records/s", "p50 ms", "p99 ms", "p999 ms",
		"allocs/req", "B/req", "CPU µs/req", "gw allocs/req", "gw B/req", "gw CPU µs/req", "errors")
	for _, x := range r.Results {
		p50, p99, p999 := "-", "-", "-"
		if x.Latency != nil {
			p50, p99, p999 = fmt.Sprintf("%.2f", x.Latency.P50), fmt.Sprintf("%.2f", x.Latency.P99), fmt.Sprintf("%.2f", x.Latency.P999)
		}
		gwAllocs, gwBytes, gwCPU := "-", "-", "-"
		if x.GatewayAllocsPerReq > 0 {
			gwAllocs, gwBytes, gwCPU = fmt.Sprintf("%.1f", x.GatewayAllocsPerReq), fmt.Sprintf("%.0f", x.GatewayBytesPerReq), fmt.Sprintf("%.1f", x.GatewayCPUPerReqUS)
		}
		fmt.Fprintf(w, "%-28s %10.0f %10.0f %9s %9s %9s %10.0f %10.0f %10.1f %13s %10s %13s %7d\n", x.Mode, x.RequestsPerSec, x.RecordsPerSec,
			p50, p99, p999, x.AllocsPerReq, x.BytesPerReq, x.CPUPerReqUS, gwAllocs, gwBytes, gwCPU, x.Errors)
	}
	if len(r.Results) >= 3 {
		raw, gw := r.Results[0].RecordsPerSec, r.Results[2].RecordsPerSec
		fmt.Fprintf(w, "\ngateway / raw async producer: %.2f×; gateway / raw sync producer: %.2f×\n", gw/raw, gw/r.Results[1].RecordsPerSec)
	}
	return nil
}
