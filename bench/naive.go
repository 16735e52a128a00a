package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/processor"
	"github.com/rostrumhq/rostrum/sink"
)

// scoreOf returns the score an event gives its member when the event is
// taken alone (a member that was never seen before: audio off, volume 0,
// video off, role student, then the event's own field), and false when the
// event removes the member from the ranking (leave, an excluded role).
func scoreOf(m *codec.Meeting, t codec.Type, value, ts int64) (float64, bool) {
	s := codec.MemberScore{Role: codec.RoleStudent, TS: ts}
	switch t {
	case codec.TypeLeave:
		return 0, false
	case codec.TypeAudio:
		s.Audio = uint8(value)
	case codec.TypeVideo:
		s.Video = uint8(value)
	case codec.TypeVolume:
		s.Volume = uint16(value)
	case codec.TypeRole:
		if !codec.Role(value).Ranked() {
			return 0, false
		}
		s.Role = codec.Role(value)
	}
	score, err := m.Encode(s)
	return score, err == nil
}

// naive runs the design rostrum replaces, over the same preloaded records:
// a plain consumer group, and per event one blocking round trip each for a
// ZADD (or ZREM), a ZREVRANGE 0 6 and a produce of the room's top list. It
// stops after Config.NaiveDuration (or when every record is handled).
func (b *runner) naive(ctx context.Context) (Result, error) {
	w := b.w
	if err := b.flush(ctx); err != nil {
		return Result{}, err
	}
	in := processor.TopicsFor(b.prefix, envFlat)
	out := processor.TopicsFor(b.prefix, envNaive).TopN
	hook := &roundTrips{}
	rc := b.newClient(0)
	defer rc.Close()
	rc.AddHook(hook)
	cl, err := kgo.NewClient(b.kafka(kgo.ConsumerGroup(b.prefix+"rostrum-"+envNaive),
		kgo.ConsumeTopics(in.Inputs()...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DefaultProduceTopic(out), kgo.ProducerLinger(0))...)
	if err != nil {
		return Result{}, err
	}
	defer cl.Close()
	dec := codec.NewDecoder(codec.DecodeConfig{})
	meeting := codec.NewMeeting(time.Time{})
	m := meter{admin: b.admin, hook: hook}
	before, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}

	var (
		start, deadline time.Time
		events, records int64
		evs             []codec.Event
		value           []byte
		bad             int
		write, read     time.Duration // time in the Redis round trips
		produce         time.Duration // time in the synchronous produces
	)
	total := int64(len(w.Records))
loop:
	for records < total {
		pctx, cancel := context.WithTimeout(ctx, time.Minute)
		fs := cl.PollRecords(pctx, 1000)
		cancel()
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		if err := fs.Err0(); err != nil {
			return Result{}, fmt.Errorf("bench: naive consumer: %w", err)
		}
		for _, rec := range fs.Records() {
			if start.IsZero() {
				start = time.Now()
				deadline = start.Add(b.cfg.NaiveDuration)
			}
			if time.Now().After(deadline) {
				break loop
			}
			records++
			var src codec.Source
			switch rec.Topic {
			case in.RTC:
				src = codec.SourceRTC
			case in.Client:
				src = codec.SourceClient
			default:
				src = codec.SourceSignal
			}
			evs, err = dec.Decode(evs[:0], rec.Value, src, time.Now())
			if err != nil {
				bad++
				continue
			}
			for i := range evs {
				ev := &evs[i]
				key := sink.RoomKeys(envNaive, ev.RoomID).Ranking
				t0 := time.Now()
				if score, ok := scoreOf(meeting, ev.Type, ev.Value, ev.TS); ok {
					err = rc.ZAdd(ctx, key, redis.Z{Score: score, Member: ev.UserID}).Err()
				} else {
					err = rc.ZRem(ctx, key, ev.UserID).Err()
				}
				if err != nil {
					return Result{}, fmt.Errorf("bench: naive write: %w", err)
				}
				t1 := time.Now()
				top, err := rc.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: 0, Stop: 6, Rev: true}).Result()
				if err != nil {
					return Result{}, fmt.Errorf("bench: naive read: %w", err)
				}
				t2 := time.Now()
				value = topList(value[:0], ev, top)
				if err := cl.ProduceSync(ctx, &kgo.Record{Key: rec.Key, Value: value}).FirstErr(); err != nil {
					return Result{}, fmt.Errorf("bench: naive produce: %w", err)
				}
				write, read, produce = write+t1.Sub(t0), read+t2.Sub(t1), produce+time.Since(t2)
				events++
			}
		}
	}
	elapsed := time.Since(start)
	after, err := m.snap(ctx)
	if err != nil {
		return Result{}, err
	}
	r := Result{Mode: ModeNaive, Events: events, Records: records, Seconds: elapsed.Seconds()}
	if events == 0 {
		return r, fmt.Errorf("bench: the naive mode handled no event")
	}
	r.EventsPerSec = float64(events) / r.Seconds
	fill(&r, before, after, events)
	m.fillNodes(&r, before, after)
	ms := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(events) }
	r.Stages = map[string]float64{"redis_write": ms(write), "redis_read": ms(read), "produce": ms(produce),
		"other": ms(elapsed - write - read - produce)}
	if bad > 0 {
		b.problem("%s: %d records did not decode", ModeNaive, bad)
	}
	return r, b.memory(ctx, &r, envNaive, before.redis.usedMemory)
}

// topList appends the naive design's output record: the room's top list as
// Redis returned it.
func topList(b []byte, ev *codec.Event, top []redis.Z) []byte {
	b = append(b, `{"room_id":`...)
	b = strconv.AppendQuote(b, ev.RoomID)
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ev.TS, 10)
	b = append(b, `,"top":[`...)
	for i, z := range top {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"user_id":`...)
		b = strconv.AppendQuote(b, fmt.Sprint(z.Member))
		b = append(b, `,"score":`...)
		b = strconv.AppendFloat(b, z.Score, 'f', -1, 64)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
