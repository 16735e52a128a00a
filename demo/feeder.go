package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/meeting"
)

// FeedConfig shapes the simulated meeting load.
type FeedConfig struct {
	Brokers []string
	Env     string
	Rooms   int // default 12
	// MaxMembers caps the members of a room (a scenario keeps at least its
	// talkers, its noisy microphones and a few listeners); default 60.
	MaxMembers int
	// Seed selects the meetings: the same seed gives every room the same
	// meetings. Default 1.
	Seed uint64
	// KafkaOpts are added to the producer's options: TLS and SASL for
	// brokers that need them.
	KafkaOpts []kgo.Opt
	// Gateway, when set, is the base URL of a rostrum gateway
	// (http://host:port): the callbacks are POSTed to it, as the meeting
	// system's producers do, instead of produced to Kafka; Brokers and Env
	// are then unused (the gateway routes by room id). Token is its bearer
	// token, if it wants one.
	Gateway, Token string
	// RoomPrefix begins every room id ("gray-" gives "gray-r-3"), so that a
	// gateway routes the rooms to an environment. Default: none.
	RoomPrefix string
}

// Rates of the records the demo adds to the meetings' own.
const (
	badRate     = 0.002 // records the processor must send to the DLQ
	dupRate     = 0.005 // records sent twice, as a producer retrying does
	unknownRate = 0.004 // callbacks of types rostrum does not rank on
	meetingLen  = 10 * time.Minute
)

// Feed produces simulated meetings to the env's callback topics in real
// time (each record when the wall clock reaches its event time) until ctx
// ends. Room r-i holds the meetings of scenario i mod 4 of package
// internal/meeting (a discussion, screen-share hand-overs, a lecture, a town
// hall; the flicker benchmark replays the same ones): speakers taking
// turns, background noise from open microphones, mutes, presenters sharing
// their screen, a host spotlighting them, joins and leaves. One meeting follows the other every 10 minutes
// (everyone leaves, a new meeting starts). A low rate of bad, duplicate and
// unknown-type records rides along.
func Feed(ctx context.Context, cfg FeedConfig) error {
	if cfg.Rooms == 0 {
		cfg.Rooms = 12
	}
	if cfg.MaxMembers == 0 {
		cfg.MaxMembers = 60
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	// send delivers one callback record of a source (rtc, client, signal):
	// POSTed to the gateway, or produced to the env's topic.
	var send func(source string, key, value []byte)
	if cfg.Gateway != "" {
		p := newPoster(cfg.Gateway, cfg.Token)
		send = func(source string, _, value []byte) { _ = p.post(ctx, source, value) }
	} else {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, cfg.KafkaOpts...)...)
		if err != nil {
			return err
		}
		defer cl.Close()
		send = func(source string, key, value []byte) {
			cl.Produce(ctx, &kgo.Record{Topic: cfg.Env + ".callbacks." + source, Key: key, Value: value}, nil)
		}
	}
	var wg sync.WaitGroup
	for i := range cfg.Rooms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			feedRoom(ctx, send, cfg, i)
		}()
	}
	wg.Wait()
	return nil
}

// Scenario returns the scenario that room r-i of the demo plays, with its
// members capped at maxMembers.
func Scenario(i, maxMembers int) meeting.Scenario {
	names := []string{"discussion", "handover", "lecture", "townhall"}
	sc, err := meeting.ScenarioByName(names[i%len(names)])
	if err != nil {
		panic(err)
	}
	sc.Members = min(sc.Members, max(maxMembers, sc.Talkers+sc.Noisy+5))
	return sc
}

// feedRoom plays room r-i's meetings until ctx ends.
func feedRoom(ctx context.Context, send func(source string, key, value []byte), cfg FeedConfig, i int) {
	sc := Scenario(i, cfg.MaxMembers)
	room := cfg.RoomPrefix + "r-" + strconv.Itoa(i)
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var lastSource string
	var lastValue []byte
	for n := uint64(0); ctx.Err() == nil; n++ {
		evs := meeting.Generate(sc, meetingLen, cfg.Seed*1000+uint64(i)*100+n)
		shift := time.Now().UnixMilli() - meeting.BaseTS
		seen := map[string]bool{}
		for _, ev := range evs {
			ev.RoomID, ev.TS = room, ev.TS+shift
			if d := time.Until(time.UnixMilli(ev.TS)); d > 0 {
				timer.Reset(d)
				select {
				case <-ctx.Done():
					return
				case <-timer.C:
				}
			}
			seen[ev.UserID] = true
			src, value := sourceOf(ev.Type, rng), eventJSON(ev)
			switch u := rng.Float64(); {
			case u < badRate:
				send(src, []byte(room), fmt.Appendf(nil, `{"room_id":%q,"user_id":%q,"type":"volume","value":%d,"ts":%d}`, room, ev.UserID, 1000+rng.IntN(9000), ev.TS))
			case u < badRate+dupRate && lastValue != nil:
				send(lastSource, []byte(room), lastValue)
			case u < badRate+dupRate+unknownRate:
				send("client", []byte(room), fmt.Appendf(nil, `{"room_id":%q,"user_id":%q,"type":"hand_raise","value":{"up":true},"ts":%d}`, room, ev.UserID, ev.TS))
			}
			send(src, []byte(room), value)
			lastSource, lastValue = src, value
		}
		// The meeting ends: everyone leaves before the next one starts.
		now := time.Now().UnixMilli()
		for user := range seen {
			send("signal", []byte(room), eventJSON(codec.Event{RoomID: room, UserID: user, Type: codec.TypeLeave, TS: now}))
		}
	}
}

// sourceOf picks the callback topic an event of type t comes through.
func sourceOf(t codec.Type, rng *rand.Rand) string {
	switch t {
	case codec.TypeVolume:
		return "rtc"
	case codec.TypeAudio, codec.TypeVideo, codec.TypeScreenShare:
		if rng.IntN(2) == 0 {
			return "rtc"
		}
		return "client"
	case codec.TypeSpotlight:
		return "client" // the host's client
	}
	return "signal"
}

// eventJSON encodes ev as a callback record.
func eventJSON(ev codec.Event) []byte {
	b := fmt.Appendf(nil, `{"room_id":%q,"user_id":%q,"type":%q`, ev.RoomID, ev.UserID, ev.Type)
	switch ev.Type {
	case codec.TypeJoin, codec.TypeLeave:
	case codec.TypeRole:
		b = fmt.Appendf(b, `,"value":%q`, codec.Role(ev.Value))
	default:
		b = fmt.Appendf(b, `,"value":%d`, ev.Value)
	}
	return fmt.Appendf(b, `,"ts":%d}`, ev.TS)
}
