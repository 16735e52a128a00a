package flicker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/rostrumhq/rostrum/codec"
	"github.com/rostrumhq/rostrum/internal/meeting"
	"github.com/rostrumhq/rostrum/stability"
)

// Strategy names, in report order.
const (
	Raw        = "raw"        // the raw top-N in rank order
	Merge      = "merge"      // the merge of seed 003 (stability.Merge)
	Hysteresis = "hysteresis" // rostrum's stable strategy (stability.Hysteresis)
)

// Strategies lists the strategies every scenario is replayed through.
func Strategies() []string { return []string{Raw, Merge, Hysteresis} }

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

	// Meeting is the score layout and ranking rules; default
	// codec.NewMeeting(codec.DefaultEpoch).
	Meeting *codec.Meeting
}

func (c Config) withDefaults() Config {
	if len(c.Scenarios) == 0 {
		for _, s := range meeting.Scenarios() {
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
		if _, err := meeting.ScenarioByName(name); err != nil {
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
	Rules     string           `json:"rules,omitempty"`     // ranking rules of a replayed WAL
	Scenarios []ScenarioResult `json:"scenarios"`
}

// ScenarioResult holds one scenario's numbers for every strategy.
type ScenarioResult struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Events      int      `json:"events"`
	Stints      int      `json:"stints"` // stints of members who truly belong in the top-N
	Results     []Result `json:"results"`
	minutes     float64  // measured
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
	// OutputsPerMin is the output records per minute the strategy's list
	// costs: one per change of the list, and one per change of a listed
	// member's flags (spotlight, screen share, audio, video, role) with no
	// change of the list, RepublishedPerMin of them.
	OutputsPerMin     float64 `json:"outputs_per_min"`
	RepublishedPerMin float64 `json:"republished_per_min"`

	totals
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
		sc, _ := meeting.ScenarioByName(name)
		rep.Scenarios = append(rep.Scenarios, replay(cfg, cfg.meetingCodec(), sc.Name, sc.Description,
			meeting.Generate(sc, cfg.Duration, cfg.Seed), meeting.BaseTS, meeting.BaseTS+cfg.Duration.Milliseconds()))
	}
	return rep, nil
}

// RunEvents replays recorded meetings, one room each (events in any order;
// other than meeting events are skipped), through every strategy, from each
// room's first event to its last, and adds an "overall" row pooling every
// room. cfg.Scenarios, Seed and Duration are not used. Rooms come in
// order of their names.
func RunEvents(cfg Config, rooms map[string][]codec.Event) (*Report, error) {
	cfg.Scenarios = []string{meeting.Scenarios()[0].Name} // not used; keeps Validate quiet
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rep := &Report{N: cfg.N, Batch: cfg.Batch.String(), MinStint: cfg.MinStint.String(),
		Dwell: cfg.Dwell.String(), Grace: cfg.Grace.String(), Margin: cfg.Margin, Rules: cfg.meetingCodec().Rules().String()}
	names := slices.Sorted(maps.Keys(rooms))
	for _, name := range names {
		evs := slices.Clone(rooms[name])
		evs = slices.DeleteFunc(evs, func(e codec.Event) bool { return !e.Type.Meeting() })
		if len(evs) == 0 {
			continue
		}
		slices.SortStableFunc(evs, func(a, b codec.Event) int { return cmp.Compare(a.TS, b.TS) })
		start, end := evs[0].TS, evs[len(evs)-1].TS+cfg.Batch.Milliseconds()
		rep.Scenarios = append(rep.Scenarios, replay(cfg, cfg.meetingCodec(), name, "", evs, start, end))
	}
	if len(rep.Scenarios) == 0 {
		return nil, errors.New("flicker: no meeting events to replay")
	}
	rep.Scenarios = append(rep.Scenarios, overall(rep.Scenarios))
	return rep, nil
}

// meetingCodec returns the configured meeting codec, or the default one.
func (c Config) meetingCodec() *codec.Meeting {
	if c.Meeting != nil {
		return c.Meeting
	}
	return codec.NewMeeting(codec.DefaultEpoch)
}

// MarginScore converts a margin in volume steps into meeting score units;
// 0 when the rules do not rank on volume.
func MarginScore(m *codec.Meeting, steps int) float64 {
	return float64(steps) * float64(m.Multiplier(codec.RuleVolume))
}

// lane is one strategy's shown list over time, as published.
type lane struct {
	name        string
	list        []string
	flags       []uint16 // the listed members' flags as published, slot by slot
	shown       timeline
	replaced    int
	moved       int
	outputs     int // output records: a new list, or a listed member's flags changed
	republished int // of which the list stayed the same
	scratch     []uint16
}

// publish records the strategy's list at time at: an output record when
// the list changed or a listed member's flags did (docs/DESIGN.md §10).
func (l *lane) publish(rm *room, list []string, at, measureFrom int64) {
	fl := l.scratch[:0]
	for _, id := range list {
		fl = append(fl, rm.flags(id))
	}
	l.scratch = fl
	same := slices.Equal(list, l.list)
	if same && slices.Equal(fl, l.flags) {
		return
	}
	if at >= measureFrom {
		r, m := changes(l.list, list)
		l.replaced += r
		l.moved += m
		l.outputs++
		if same {
			l.republished++
		}
	}
	l.list = append(l.list[:0], list...)
	l.flags = append(l.flags[:0], fl...)
	if !same {
		l.shown.set(list, at)
	}
}

// replay runs one meeting through the strategies over [start, end). Time
// moves from one moment to the next: every Batch (all strategies read the
// raw top-N) and, between them, at the hysteresis deadlines (its timer).
func replay(cfg Config, mc *codec.Meeting, name, desc string, evs []codec.Event, start, end int64) ScenarioResult {
	rm := newRoom(mc)
	h := stability.Hysteresis{N: cfg.N, Dwell: cfg.Dwell, Grace: cfg.Grace, Margin: math.Inf(1)}
	if cfg.Margin > 0 {
		if ms := MarginScore(mc, cfg.Margin); ms > 0 {
			h.Margin = ms
		}
	}
	var st stability.State
	lanes := []*lane{{name: Raw}, {name: Merge}, {name: Hysteresis}}
	for _, l := range lanes {
		l.shown = newTimeline()
	}
	truth := newTimeline()
	measureFrom := min(start+cfg.Warmup.Milliseconds(), end)
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
			lanes[0].publish(rm, ids, at, measureFrom)
			merged = stability.Merge(merged, lanes[1].list, ids, cfg.N)
			lanes[1].publish(rm, merged, at, measureFrom)
			next += batch
		}
		hl := lanes[2]
		standing = standing[:0]
		for k, id := range hl.list {
			standing = append(standing, rm.standing(id, hl.flags[k]))
		}
		list = h.Step(list, &st, hl.list, standing, raw, at)
		hl.publish(rm, list, at, measureFrom)
		last = at
	}
	truth.close(end)
	res := ScenarioResult{Name: name, Description: desc, Events: len(evs)}
	minutes := float64(end-measureFrom) / 60000
	res.minutes = minutes
	minStint := cfg.MinStint.Milliseconds()
	belong, stale := truth.stints(minStint, measureFrom, end)
	res.Stints = len(belong)
	for _, l := range lanes {
		l.shown.close(end)
		r := Result{Strategy: l.name}
		var waits []float64
		for _, s := range belong {
			w, ok := l.shown.firstOn(s.id, s.from, s.to)
			if !ok {
				r.Unshown++
			}
			waits = append(waits, float64(w)/1000)
		}
		var staleMS, shownMS int64
		for id, spans := range l.shown.spans {
			for _, sp := range spans {
				shownMS += overlap(sp, span{measureFrom, end})
				for _, o := range stale[id] {
					staleMS += overlap(sp, span{max(o.from, measureFrom), o.to})
				}
			}
		}
		r.totals = totals{replaced: l.replaced, moved: l.moved, outputs: l.outputs, republished: l.republished,
			waits: waits, staleMS: staleMS, shownMS: shownMS, minutes: minutes}
		r.finish()
		res.Results = append(res.Results, r)
	}
	return res
}

// totals are a result's raw counts, kept to pool rooms into an overall
// result.
type totals struct {
	replaced, moved, outputs, republished int
	waits                                 []float64
	staleMS, shownMS                      int64
	minutes                               float64
}

// finish computes r's rates from its totals.
func (r *Result) finish() {
	t := &r.totals
	if t.minutes > 0 {
		r.ReplacedPerMin, r.MovedPerMin = float64(t.replaced)/t.minutes, float64(t.moved)/t.minutes
		r.OutputsPerMin, r.RepublishedPerMin = float64(t.outputs)/t.minutes, float64(t.republished)/t.minutes
	}
	r.ChangesPerMin = r.ReplacedPerMin + r.MovedPerMin
	r.AppearP50, r.AppearP95 = percentile(t.waits, 0.50), percentile(t.waits, 0.95)
	if t.shownMS > 0 {
		r.StaleShare = float64(t.staleMS) / float64(t.shownMS)
	}
}

// overall pools the rooms' results into one row per strategy.
func overall(rooms []ScenarioResult) ScenarioResult {
	all := ScenarioResult{Name: "overall", Description: "every room pooled"}
	for _, s := range Strategies() {
		r := Result{Strategy: s}
		for _, sr := range rooms {
			x := sr.Result(s)
			all.Events, all.Stints = all.Events+sr.Events, all.Stints+sr.Stints
			t := &x.totals
			r.replaced += t.replaced
			r.moved += t.moved
			r.outputs += t.outputs
			r.republished += t.republished
			r.waits = append(r.waits, t.waits...)
			r.staleMS += t.staleMS
			r.shownMS += t.shownMS
			r.minutes += t.minutes
			r.Unshown += x.Unshown
		}
		r.finish()
		all.Results = append(all.Results, r)
	}
	n := len(Strategies())
	all.Events, all.Stints = all.Events/n, all.Stints/n
	return all
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
