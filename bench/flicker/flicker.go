package flicker

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/stability"
)

// Strategy names, in report order.
const (
	Raw        = "raw"        // the raw top-N in rank order
	Seed       = "seed"       // seed 003's merge (stability.Merge)
	Hysteresis = "hysteresis" // rostrum's stable strategy (stability.Hysteresis)
)

// Strategies lists the strategies every scenario is replayed through.
func Strategies() []string { return []string{Raw, Seed, Hysteresis} }

// Config says what to replay. Zero fields take the defaults noted.
type Config struct {
	Scenarios []string      // scenario names; default all (Scenarios)
	Seed      uint64        // selects the generated meetings; default 1
	Duration  time.Duration // length of each meeting; default 10m
	Warmup    time.Duration // start of the meeting that is not measured; default 10s
	N         int           // list length; default 7
	// Batch is how often the raw top-N is read and the lists are merged, as
	// the processor does once per poll batch; default 100ms.
	Batch time.Duration
	// MinStint is how long a member must stay in the raw top-N to truly
	// belong there, and how long out of it to truly no longer belong;
	// shorter stints are the noise the strategies should ignore. Default 2s.
	MinStint time.Duration

	// The hysteresis parameters, as processor.Config takes them: 0 is
	// none (off), as on the command line, whose defaults are
	// stability.DefaultDwell, DefaultGrace and DefaultMargin.
	Dwell  time.Duration
	Grace  time.Duration
	Margin int // volume steps
}

func (c Config) withDefaults() Config {
	if len(c.Scenarios) == 0 {
		for _, s := range Scenarios() {
			c.Scenarios = append(c.Scenarios, s.Name)
		}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Duration == 0 {
		c.Duration = 10 * time.Minute
	}
	if c.Warmup == 0 {
		c.Warmup = 10 * time.Second
	}
	if c.N == 0 {
		c.N = stability.DefaultN
	}
	if c.Batch == 0 {
		c.Batch = 100 * time.Millisecond
	}
	if c.MinStint == 0 {
		c.MinStint = 2 * time.Second
	}
	return c
}

// Validate reports the first field of c (defaults filled in) out of range.
func (c Config) Validate() error {
	c = c.withDefaults()
	for _, name := range c.Scenarios {
		if _, err := ScenarioByName(name); err != nil {
			return err
		}
	}
	switch {
	case c.Duration < time.Minute || c.Duration > 24*time.Hour:
		return fmt.Errorf("flicker: Duration must be between 1m and 24h, got %s", c.Duration)
	case c.Warmup < 0 || c.Warmup >= c.Duration:
		return errors.New("flicker: Warmup must be shorter than Duration")
	case c.N < 1 || c.N > 100:
		return fmt.Errorf("flicker: N must be between 1 and 100, got %d", c.N)
	case c.Batch < time.Millisecond:
		return fmt.Errorf("flicker: Batch must be at least 1ms, got %s", c.Batch)
	case c.MinStint < 0:
		return errors.New("flicker: MinStint must not be negative")
	case c.Dwell < 0 || c.Dwell > time.Minute || c.Grace < 0 || c.Grace > time.Minute:
		return errors.New("flicker: Dwell and Grace must be between 0 (none) and 1m")
	case c.Margin < 0 || c.Margin > codec.MaxVolume+1:
		return fmt.Errorf("flicker: Margin must be between 0 (off) and %d volume steps, got %d", codec.MaxVolume+1, c.Margin)
	}
	return nil
}

// Report is the result of Run.
type Report struct {
	Seed      uint64           `json:"seed"`
	Duration  string           `json:"duration"`
	N         int              `json:"n"`
	Batch     string           `json:"batch"`
	MinStint  string           `json:"min_stint"`
	Dwell     string           `json:"dwell"`
	Grace     string           `json:"grace"`
	Margin    int              `json:"margin_volume_steps"` // 0: off
	Scenarios []ScenarioResult `json:"scenarios"`
}

// ScenarioResult holds one scenario's numbers for every strategy.
type ScenarioResult struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Events      int      `json:"events"`
	Stints      int      `json:"stints"` // stints of members who truly belong in the top-N
	Results     []Result `json:"results"`
}

// Result is one strategy's behaviour in one scenario, over the measured
// part of the meeting.
type Result struct {
	Strategy string `json:"strategy"`
	// ChangesPerMin is the visible changes per minute: tiles replaced
	// (a member enters or leaves the list) plus tiles moved (a member that
	// stays changes slot).
	ChangesPerMin  float64 `json:"changes_per_min"`
	ReplacedPerMin float64 `json:"replaced_per_min"`
	MovedPerMin    float64 `json:"moved_per_min"`
	// AppearP50 and AppearP95 are the time, in seconds, from when a member
	// enters the raw top-N for a stint of at least MinStint until it is
	// shown (0 when it already was). A stint that ends unshown counts whole.
	AppearP50 float64 `json:"appear_p50_s"`
	AppearP95 float64 `json:"appear_p95_s"`
	Unshown   int     `json:"unshown_stints"` // stints that ended before the member was shown
	// StaleShare is the share of tile time showing a member that no longer
	// belongs: out of the raw top-N for a stint of at least MinStint.
	StaleShare float64 `json:"stale_share"`
}

// Result returns the result of strategy s, or nil.
func (sr *ScenarioResult) Result(s string) *Result {
	for i := range sr.Results {
		if sr.Results[i].Strategy == s {
			return &sr.Results[i]
		}
	}
	return nil
}

// Run generates each scenario's meeting and replays it through every
// strategy. It is deterministic: the same Config gives the same Report.
func Run(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rep := &Report{Seed: cfg.Seed, Duration: cfg.Duration.String(), N: cfg.N, Batch: cfg.Batch.String(),
		MinStint: cfg.MinStint.String(), Dwell: cfg.Dwell.String(), Grace: cfg.Grace.String(), Margin: cfg.Margin}
	for _, name := range cfg.Scenarios {
		sc, _ := ScenarioByName(name)
		rep.Scenarios = append(rep.Scenarios, replay(cfg, sc, Generate(sc, cfg.Duration, cfg.Seed)))
	}
	return rep, nil
}

// MarginScore converts a margin in volume steps into meeting score units.
func MarginScore(m *codec.Meeting, steps int) float64 {
	for _, f := range m.Layout().Fields() {
		if f.Name == "volume" {
			return float64(steps) * float64(uint64(1)<<f.Shift)
		}
	}
	panic("flicker: meeting layout without a volume field")
}

// lane is one strategy's shown list over time.
type lane struct {
	name     string
	list     []string
	shown    timeline
	replaced int
	moved    int
}

func (l *lane) set(list []string, at, measureFrom int64) {
	if at >= measureFrom {
		r, m := changes(l.list, list)
		l.replaced += r
		l.moved += m
	}
	l.list = append(l.list[:0], list...)
	l.shown.set(list, at)
}

// replay runs one meeting through the strategies. Time moves from one
// moment to the next: every Batch (all strategies read the raw top-N) and,
// between them, at the hysteresis deadlines (its timer).
func replay(cfg Config, sc Scenario, evs []codec.Event) ScenarioResult {
	meeting := codec.NewMeeting(codec.DefaultEpoch)
	rm := newRoom(meeting)
	h := stability.Hysteresis{N: cfg.N, Dwell: cfg.Dwell, Grace: cfg.Grace, Margin: math.Inf(1)}
	if cfg.Margin > 0 {
		h.Margin = MarginScore(meeting, cfg.Margin)
	}
	var st stability.State
	lanes := []*lane{{name: Raw}, {name: Seed}, {name: Hysteresis}}
	for _, l := range lanes {
		l.shown = newTimeline()
	}
	truth := newTimeline()
	start, end := BaseTS, BaseTS+cfg.Duration.Milliseconds()
	measureFrom := start + cfg.Warmup.Milliseconds()
	batch := cfg.Batch.Milliseconds()

	var raw []stability.Member
	var ids, list, merged []string
	var standing []stability.Standing
	next, last := start+batch, start
	i := 0
	for {
		at, boundary := next, true
		if d := h.Next(&st); d > last && d < next {
			at, boundary = d, false
		}
		if at >= end {
			break
		}
		for i < len(evs) && evs[i].TS <= at {
			rm.apply(evs[i])
			i++
		}
		raw = rm.top(raw, cfg.N)
		ids = ids[:0]
		for _, m := range raw {
			ids = append(ids, m.ID)
		}
		truth.set(ids, at)
		if boundary {
			lanes[0].set(ids, at, measureFrom)
			merged = stability.Merge(merged, lanes[1].list, ids, cfg.N)
			lanes[1].set(merged, at, measureFrom)
			next += batch
		}
		hl := lanes[2]
		standing = standing[:0]
		for _, id := range hl.list {
			standing = append(standing, rm.standing(id))
		}
		list = h.Step(list, &st, hl.list, standing, raw, at)
		if !slices.Equal(list, hl.list) {
			hl.set(list, at, measureFrom)
		}
		last = at
	}
	truth.close(end)
	res := ScenarioResult{Name: sc.Name, Description: sc.Description, Events: len(evs)}
	minutes := float64(end-measureFrom) / 60000
	minStint := cfg.MinStint.Milliseconds()
	belong, stale := truth.stints(minStint, measureFrom, end)
	res.Stints = len(belong)
	for _, l := range lanes {
		l.shown.close(end)
		r := Result{Strategy: l.name, ReplacedPerMin: float64(l.replaced) / minutes, MovedPerMin: float64(l.moved) / minutes}
		r.ChangesPerMin = r.ReplacedPerMin + r.MovedPerMin
		var waits []float64
		for _, s := range belong {
			w, ok := l.shown.firstOn(s.id, s.from, s.to)
			if !ok {
				r.Unshown++
			}
			waits = append(waits, float64(w)/1000)
		}
		r.AppearP50, r.AppearP95 = percentile(waits, 0.50), percentile(waits, 0.95)
		var staleMS, shownMS int64
		for id, spans := range l.shown.spans {
			for _, sp := range spans {
				shownMS += overlap(sp, span{measureFrom, end})
				for _, o := range stale[id] {
					staleMS += overlap(sp, span{max(o.from, measureFrom), o.to})
				}
			}
		}
		if shownMS > 0 {
			r.StaleShare = float64(staleMS) / float64(shownMS)
		}
		res.Results = append(res.Results, r)
	}
	return res
}

// changes counts the visible changes from list a to list b: tiles replaced
// (members entering or leaving; a tile that changes hands counts once) and
// tiles moved (members in both lists whose slot changed).
func changes(a, b []string) (replaced, moved int) {
	in, out := 0, 0
	for i, m := range b {
		j := slices.Index(a, m)
		switch {
		case j < 0:
			in++
		case j != i:
			moved++
		}
	}
	for _, m := range a {
		if !slices.Contains(b, m) {
			out++
		}
	}
	return max(in, out), moved
}

// percentile returns the p-quantile of xs by nearest rank (0 for none).
func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
