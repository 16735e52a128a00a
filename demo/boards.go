package demo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BoardFeedConfig shapes the simulated leaderboard load.
type BoardFeedConfig struct {
	Brokers []string
	Env     string
	Rooms   int     // live rooms receiving gifts; default 12
	Users   int     // viewers and players; default 200
	Items   int     // traded items; default 20
	Rate    float64 // board events per second; default 50
	Seed    uint64  // default 1
	// KafkaOpts are added to the producer's options: TLS and SASL for
	// external brokers.
	KafkaOpts []kgo.Opt
}

// FeedBoards produces the board events of docs/DESIGN.md §8 to the env's client
// topic in real time until ctx ends: gifts to live rooms (seed 000), now and
// then the refund of a recent gift (a negative gift, which the example
// boards take: allow-negative), points in tenths (2.5: seed 001's scale-10
// board) and received/read/passed actions of users (seed 001), and item
// trades (seed 002); the gifts also feed the decay boards, all time
// (hot-rooms) and over a day (trending-rooms), and every 10 minutes one of
// the quieter rooms is rising: it gets a quarter of the gifts, so that
// the trending board, which counts recent gifts more, shows it climbing
// while the 7-day board hardly moves. A few
// events carry an id and are sent twice, as a producer that retries would,
// so the boards' id check has work to do.
func FeedBoards(ctx context.Context, cfg BoardFeedConfig) error {
	if cfg.Rooms == 0 {
		cfg.Rooms = 12
	}
	if cfg.Users == 0 {
		cfg.Users = 200
	}
	if cfg.Items == 0 {
		cfg.Items = 20
	}
	if cfg.Rate == 0 {
		cfg.Rate = 50
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ProducerLinger(5 * time.Millisecond)}, cfg.KafkaOpts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	topic := cfg.Env + ".callbacks.client"
	g := newBoardGen(cfg)
	tick := time.NewTicker(time.Duration(float64(time.Second) / cfg.Rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			key, value, retry := g.next(now.UnixMilli())
			n := 1
			if retry {
				n = 2
			}
			for range n {
				cl.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(key), Value: value}, nil)
			}
		}
	}
}

// boardGen draws board events: skewed so that a few rooms, users and items
// lead, with enough churn near the top to make the boards move.
type boardGen struct {
	cfg   BoardFeedConfig
	rnd   *rand.Rand
	n     int
	gifts []gift // recent gifts, the ones a refund takes back
}

// gift is a gift sent, which a refund may take back.
type gift struct {
	room, user string
	amount     int64
}

func newBoardGen(cfg BoardFeedConfig) *boardGen {
	return &boardGen{cfg: cfg, rnd: rand.New(rand.NewPCG(cfg.Seed, 0xb0a2d))}
}

// skewed returns an index in [0, n) where low indexes are more likely.
func (g *boardGen) skewed(n int) int {
	x := g.rnd.Float64()
	return int(x * x * float64(n))
}

// risingEvery is how long one room is the rising room.
const risingEvery = 10 * time.Minute

// rising returns the rising room at Unix ms ts: one of the quieter half of
// the rooms, a new one every risingEvery.
func (g *boardGen) rising(ts int64) string {
	n := g.cfg.Rooms - g.cfg.Rooms/2
	k := int(ts/risingEvery.Milliseconds()) % n
	return "r-" + strconv.Itoa(1001+g.cfg.Rooms/2+k)
}

// next returns the key and value of one board event at ts, and whether to
// send it twice (a producer's retry of an event with an id).
func (g *boardGen) next(ts int64) (key string, value []byte, retry bool) {
	g.n++
	user := "u-" + strconv.Itoa(g.skewed(g.cfg.Users)+1)
	var room, typ, val string
	var amount int64
	switch x := g.rnd.IntN(100); {
	case x < 2 && len(g.gifts) > 0: // a refund: a recent gift comes back off every gift board
		k := g.rnd.IntN(len(g.gifts))
		r := g.gifts[k]
		g.gifts = append(g.gifts[:k], g.gifts[k+1:]...)
		room, user, typ, amount = r.room, r.user, "gift", -r.amount
	case x < 40:
		room, typ = "r-"+strconv.Itoa(1001+g.skewed(g.cfg.Rooms)), "gift"
		if g.rnd.IntN(4) == 0 {
			room = g.rising(ts)
		}
		amount = []int64{1, 1, 5, 10, 52, 99, 520}[g.rnd.IntN(7)]
		if len(g.gifts) == 32 {
			g.gifts = g.gifts[1:]
		}
		g.gifts = append(g.gifts, gift{room, user, amount})
	case x < 55:
		room, typ = "quiz", "score"
		tenths := 5 + g.rnd.IntN(96) // 0.5 … 10.0 points
		val = `,"value":` + strconv.Itoa(tenths/10) + "." + strconv.Itoa(tenths%10)
	case x < 70:
		room, typ = "inbox", []string{"received", "received", "read", "passed"}[g.rnd.IntN(4)]
	default:
		room, typ = "item-"+strconv.Itoa(1+g.skewed(g.cfg.Items)), "trade"
		amount = int64(1 + g.rnd.IntN(20))
	}
	id := ""
	if g.rnd.IntN(10) == 0 {
		id = fmt.Sprintf(`,"id":"evt-%d-%d"`, g.cfg.Seed, g.n)
		retry = true
	}
	if amount != 0 {
		val = `,"value":` + strconv.FormatInt(amount, 10)
	}
	value = fmt.Appendf(nil, `{"room_id":%q,"user_id":%q,"type":%q%s,"ts":%d%s}`, room, user, typ, val, ts, id)
	return room, value, retry
}
