package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// oldestReader dates the oldest unprocessed record of lagging partitions. It
// owns a groupless consumer client, reused from one measurement to the next:
// each measurement adds the partitions at the offsets to read and removes
// them again, which drops whatever the client buffered for them.
type oldestReader struct {
	cl *kgo.Client
}

// newOldestReader returns a reader whose client connects as src does.
func newOldestReader(src *kgo.Client) (*oldestReader, error) {
	opts := append(connOpts(src),
		// Only the first record of each partition is wanted; a broker
		// returns at least one whole batch whatever the limits.
		kgo.FetchMaxBytes(4<<20),
		kgo.FetchMaxPartitionBytes(64<<10),
		kgo.FetchMaxWait(100*time.Millisecond),
		// An offset below the log start (retention) reads from the start.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Transaction markers count in the offsets; seeing them tells
		// when a partition's lag holds no data record (see ages).
		kgo.KeepControlRecords(),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("metrics: lag reader client: %w", err)
	}
	return &oldestReader{cl: cl}, nil
}

func (r *oldestReader) close() { r.cl.Close() }

// connOpts returns the options that let another client reach the brokers src
// reaches: seeds, dialer or TLS, SASL, client id, logger and timeouts. Group,
// topic and hook options are left out.
func connOpts(src *kgo.Client) []kgo.Opt {
	var opts []kgo.Opt
	if v, ok := src.OptValue(kgo.SeedBrokers).([]string); ok {
		opts = append(opts, kgo.SeedBrokers(v...))
	}
	if v, ok := src.OptValue(kgo.Dialer).(func(context.Context, string, string) (net.Conn, error)); ok && v != nil {
		opts = append(opts, kgo.Dialer(v))
	}
	if v, ok := src.OptValue(kgo.DialTLSConfig).(*tls.Config); ok && v != nil {
		opts = append(opts, kgo.DialTLSConfig(v.Clone()))
	}
	if v, ok := src.OptValue(kgo.SASL).([]sasl.Mechanism); ok && len(v) > 0 {
		opts = append(opts, kgo.SASL(v...))
	}
	if v := src.OptValues(kgo.ClientID); len(v) == 2 {
		if id, ok := v[0].(string); ok {
			if set, _ := v[1].(bool); set {
				opts = append(opts, kgo.ClientID(id))
			}
		}
	}
	if v, ok := src.OptValue(kgo.WithLogger).(kgo.Logger); ok && v != nil {
		opts = append(opts, kgo.WithLogger(v))
	}
	for _, opt := range []func(time.Duration) kgo.Opt{kgo.DialTimeout, kgo.RequestTimeoutOverhead, kgo.MetadataMinAge, kgo.MetadataMaxAge} {
		if d, ok := src.OptValue(opt).(time.Duration); ok && d > 0 {
			opts = append(opts, opt(d))
		}
	}
	return opts
}

// ages reads, for each partition of want, the first record at or after its
// from offset and returns now minus its timestamp, in seconds (0 when the
// timestamp is in the future). When the records from there to the end offset
// are all transaction markers, the partition holds nothing to process and its
// age is 0. Partitions not read before ctx ends are missing from the result,
// and the error says how many there are.
func (r *oldestReader) ages(ctx context.Context, want map[topicPartition]partitionOffsets) (map[topicPartition]float64, error) {
	add := make(map[string]map[int32]kgo.Offset)
	remove := make(map[string][]int32)
	for tp, o := range want {
		at := kgo.NewOffset().AtStart()
		if o.from >= 0 {
			at = kgo.NewOffset().At(o.from)
		}
		if add[tp.topic] == nil {
			add[tp.topic] = make(map[int32]kgo.Offset)
		}
		add[tp.topic][tp.partition] = at
		remove[tp.topic] = append(remove[tp.topic], tp.partition)
	}
	r.cl.AddConsumePartitions(add)
	defer r.cl.RemoveConsumePartitions(remove)

	ages := make(map[topicPartition]float64, len(want))
	var fetchErr error
	for len(ages) < len(want) && ctx.Err() == nil {
		fs := r.cl.PollFetches(ctx)
		if fs.IsClientClosed() {
			break
		}
		fs.EachError(func(t string, p int32, err error) {
			if fetchErr == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				fetchErr = fmt.Errorf("fetch %s/%d: %w", t, p, err)
			}
		})
		now := time.Now()
		fs.EachRecord(func(rec *kgo.Record) {
			tp := topicPartition{rec.Topic, rec.Partition}
			o, ok := want[tp]
			if !ok || rec.Offset < o.from {
				return // not asked for, or left over from an earlier read
			}
			if _, done := ages[tp]; done {
				return
			}
			if rec.Attrs.IsControl() {
				if rec.Offset >= o.end-1 {
					ages[tp] = 0 // nothing but markers up to the end
				}
				return
			}
			ages[tp] = max(0, now.Sub(rec.Timestamp).Seconds())
		})
	}
	if missing := len(want) - len(ages); missing > 0 {
		err := fmt.Errorf("metrics: oldest record of %d of %d lagging partitions not read", missing, len(want))
		if fetchErr != nil {
			err = fmt.Errorf("%w: %w", err, fetchErr)
		}
		return ages, err
	}
	return ages, nil
}
