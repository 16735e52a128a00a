package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/dlq"
	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/processor"
)

const dlqUsage = `Usage:
  rostrum dlq inspect [flags]   count the DLQ's records by reason class, source topic and hour; --sample N prints records
  rostrum dlq redrive [flags]   produce selected DLQ records back to their topic (--dry-run lists them)

Selection (both): --reason, --topic, --partition with --from-offset/--to-offset (the DLQ's own offsets),
--since/--until (when records reached the DLQ). Each command's flags: rostrum dlq <command> -h
`

// dlqFlags are the settings of `rostrum dlq`: where the DLQ is and which of
// its records to take.
type dlqFlags struct {
	brokers, env, topicPrefix string
	reasons, topics           string
	partition                 int
	from, to                  int64
	since, until              string
	sec                       cli.Security
}

// dlqCommandFlags are the flags of one dlq command beside the selection.
type dlqCommandFlags struct {
	sample             int  // inspect
	again, dryRun, all bool // redrive
}

// register registers the flags of the dlq command cmd (inspect or redrive).
func (f *dlqCommandFlags) register(fs *cli.FlagSet, cmd string) {
	if cmd == "inspect" {
		fs.Group("command").IntVar(&f.sample, "sample", 0, "also print the first N selected records with their headers")
		return
	}
	fs.Group("command").BoolVar(&f.again, "again", false, "also redrive records that were redriven before")
	fs.Group("command").BoolVar(&f.dryRun, "dry-run", false, "list the records that would be redriven, produce nothing")
	fs.Group("command").BoolVar(&f.all, "all", false, "redrive every record (without a selection, redrive refuses to start)")
}

func (f *dlqFlags) register(fs *cli.FlagSet) {
	registerBrokers(fs, &f.brokers)
	fs.Group("kafka").Sets("Env").StringVar(&f.env, "env", "prod", "environment: the DLQ is {env}.callbacks.dlq")
	registerTopicPrefix(fs, &f.topicPrefix)
	fs.Group("command").StringVar(&f.reasons, "reason", "", "reason classes to select, comma-separated (the reason label of rostrum_dlq_records_total: value, ts, json, late, …)")
	fs.Group("command").StringVar(&f.topics, "topic", "", "source topics to select, comma-separated (the rostrum-topic header)")
	fs.Group("command").IntVar(&f.partition, "partition", -1, "DLQ partition to select (with --from-offset/--to-offset)")
	fs.Group("command").Int64Var(&f.from, "from-offset", 0, "with --partition: first DLQ offset selected")
	fs.Group("command").Int64Var(&f.to, "to-offset", -1, "with --partition: last DLQ offset selected (-1: no end)")
	fs.Group("command").StringVar(&f.since, "since", "", "records that reached the DLQ at or after this time: RFC 3339, or a duration ago (2h)")
	fs.Group("command").StringVar(&f.until, "until", "", "records that reached the DLQ before this time: RFC 3339, or a duration ago")
	f.sec.RegisterKafka(fs)
}

func (f *dlqFlags) selection(now time.Time) (dlq.Selection, error) {
	sel := dlq.All()
	sel.Classes = cli.SplitList(f.reasons)
	sel.Topics = cli.SplitList(f.topics)
	if f.partition < -1 {
		return sel, fmt.Errorf("--partition must be a partition number, got %d", f.partition)
	}
	if f.partition < 0 && (f.from != 0 || f.to != -1) {
		return sel, errors.New("--from-offset and --to-offset need --partition")
	}
	sel.Partition, sel.FromOffset, sel.ToOffset = int32(f.partition), f.from, f.to
	var err error
	if sel.Since, err = parseWhen("--since", f.since, now); err != nil {
		return sel, err
	}
	if sel.Until, err = parseWhen("--until", f.until, now); err != nil {
		return sel, err
	}
	return sel, nil
}

// parseWhen reads an RFC 3339 time or a duration before now; "" is zero.
func parseWhen(flagName, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %q is neither an RFC 3339 time nor a duration", flagName, s)
	}
	return t, nil
}

func (f *dlqFlags) client() (*kgo.Client, error) {
	kopts, err := f.sec.KafkaOpts()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cli.SplitList(f.brokers)...)}, kopts...)...)
}

func cmdDLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "inspect" && args[0] != "redrive") {
		fmt.Fprint(stderr, dlqUsage)
		if len(args) == 0 {
			return errors.New("dlq: no command given")
		}
		return fmt.Errorf("dlq: unknown command %q", args[0])
	}
	fs := cli.NewFlagSet("dlq "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f dlqFlags
	f.register(fs)
	var cf dlqCommandFlags
	cf.register(fs, args[0])
	// Like simulate, only the ROSTRUM_KAFKA_* variables are read: a shell's
	// ROSTRUM_ENV meant for run never points a redrive elsewhere.
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := cli.ApplySecurityEnv(fs); err != nil {
		return err
	}
	if err := f.sec.Resolve(); err != nil {
		return err
	}
	for _, w := range f.sec.Warnings {
		fmt.Fprintln(stderr, "rostrum dlq: warning:", w)
	}
	sel, err := f.selection(time.Now())
	if err != nil {
		return err
	}
	topic := processor.TopicsFor(f.topicPrefix, f.env).DLQ
	cl, err := f.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	if args[0] == "inspect" {
		recs, err := dlq.Read(ctx, cl, topic, sel)
		if err != nil {
			return f.sec.KafkaError(err)
		}
		printSummary(stdout, topic, dlq.Summarize(recs))
		for i := 0; i < cf.sample && i < len(recs); i++ {
			printRecord(stdout, &recs[i])
		}
		return nil
	}
	if !cf.all && len(sel.Classes) == 0 && len(sel.Topics) == 0 && sel.Partition < 0 && sel.Since.IsZero() && sel.Until.IsZero() {
		return errors.New("dlq redrive: select records (--reason, --topic, --partition, --since, --until) or pass --all")
	}
	sel.Again = cf.again
	done, err := dlq.Redrive(ctx, cl, topic, sel, cf.dryRun)
	for i := range done {
		r := &done[i]
		if cf.dryRun {
			fmt.Fprintf(stdout, "would redrive %s/%s to %s (key %q, %s)\n", topic, r.ID(), r.Topic, r.Key, r.Reason)
		} else {
			fmt.Fprintf(stdout, "redrove %s/%s to %s (key %q, %s)\n", topic, r.ID(), r.To, r.Key, r.Reason)
		}
	}
	if cf.dryRun {
		fmt.Fprintf(stdout, "%d records would be redriven (dry run)\n", len(done))
	} else {
		fmt.Fprintf(stdout, "%d records redriven\n", len(done))
	}
	return f.sec.KafkaError(err)
}

func printSummary(w io.Writer, topic string, s dlq.Summary) {
	fmt.Fprintf(w, "%s: %d records selected, %d of them redriven before, %d rejected again after a redrive\n", topic, s.Records, s.Redriven, s.Again)
	for _, part := range []struct {
		title string
		m     map[string]int
		byKey bool
	}{{"by reason class", s.ByClass, false}, {"by source topic", s.ByTopic, false}, {"by hour (UTC)", s.ByHour, true}} {
		if len(part.m) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s:\n", part.title)
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			if !part.byKey && part.m[keys[i]] != part.m[keys[j]] {
				return part.m[keys[i]] > part.m[keys[j]]
			}
			return keys[i] < keys[j]
		})
		for _, k := range keys {
			fmt.Fprintf(w, "  %-40s %d\n", k, part.m[k])
		}
	}
}

func printRecord(w io.Writer, r *dlq.Record) {
	fmt.Fprintf(w, "--- %s  at %s  key %q\n", r.ID(), r.Timestamp.UTC().Format(time.RFC3339Nano), r.Key)
	for _, h := range r.Headers {
		fmt.Fprintf(w, "  %s: %s\n", h.Key, h.Value)
	}
	if r.Redriven != "" {
		fmt.Fprintf(w, "  (redriven to %s)\n", r.Redriven)
	}
	v := string(r.Value)
	if len(v) > 1024 {
		v = v[:1024] + "… (" + strconv.Itoa(len(r.Value)) + " bytes)"
	}
	fmt.Fprintf(w, "  value: %s\n", strings.ToValidUTF8(v, "\uFFFD"))
}
