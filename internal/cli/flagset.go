package cli

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"
)

// FlagSet is a command's flags, each registered through the Group of the
// concern it configures (Kafka, Redis, ranking, …). A flag's name is
// written once, where it is registered: its environment variable
// (EnvName), its key in the config file, its heading in the grouped help
// and the flag that a library Config's field error is renamed to all derive
// from that registration.
type FlagSet struct {
	*flag.FlagSet
	places map[string]Place
	fields map[string]string
}

// Place is where the grouped help shows a flag: under its group's heading,
// in the short help when it is essential, else only in the full help.
type Place struct {
	Group     string
	Essential bool
}

// NewFlagSet is flag.NewFlagSet with the flags' places recorded.
func NewFlagSet(name string, handling flag.ErrorHandling) *FlagSet {
	return &FlagSet{FlagSet: flag.NewFlagSet(name, handling), places: map[string]Place{}, fields: map[string]string{}}
}

// Group returns the registrar of one concern's flags: those it registers
// are shown under key in the grouped help, in its short form unless
// registered through Tuning.
func (fs *FlagSet) Group(key string) Group {
	return Group{fs: fs, place: Place{Group: key, Essential: true}}
}

// Place is where flag name is shown, and false for a flag registered
// without a group.
func (fs *FlagSet) Place(name string) (Place, bool) {
	p, ok := fs.places[name]
	return p, ok
}

// FieldFlags maps the library Config fields that the flags set (Group.Sets)
// to the flags' names ("--top-n"), for config.Rename: a Validate error
// names the field, the command's error names the flag.
func (fs *FlagSet) FieldFlags() map[string]string {
	out := make(map[string]string, len(fs.fields))
	for field, name := range fs.fields {
		out[field] = name
	}
	return out
}

// Group registers flags of one concern into a FlagSet. Its methods are
// those of flag.FlagSet that rostrum's commands use.
type Group struct {
	fs     *FlagSet
	place  Place
	fields []string
}

// Tuning returns the group's registrar for flags that the short help
// leaves out (it counts them and points to --help-all).
func (g Group) Tuning() Group {
	g.place.Essential = false
	return g
}

// Sets returns a registrar for one flag that sets the named fields of a
// library Config (processor.Config.TopN, …), so that their Validate errors
// are reported under the flag's name.
func (g Group) Sets(fields ...string) Group {
	g.fields = fields
	return g
}

// record notes where flag name is shown and which fields it sets. A flag
// name means the same in every command, so it has one place.
func (g Group) record(name string) {
	if p, ok := g.fs.places[name]; ok && p != g.place {
		panic(fmt.Sprintf("cli: flag --%s placed twice (%v, %v)", name, p, g.place))
	}
	g.fs.places[name] = g.place
	for _, f := range g.fields {
		g.fs.fields[f] = "--" + name
	}
}

// StringVar is flag.FlagSet.StringVar.
func (g Group) StringVar(p *string, name, value, usage string) {
	g.fs.StringVar(p, name, value, usage)
	g.record(name)
}

// IntVar is flag.FlagSet.IntVar.
func (g Group) IntVar(p *int, name string, value int, usage string) {
	g.fs.IntVar(p, name, value, usage)
	g.record(name)
}

// Int64Var is flag.FlagSet.Int64Var.
func (g Group) Int64Var(p *int64, name string, value int64, usage string) {
	g.fs.Int64Var(p, name, value, usage)
	g.record(name)
}

// Float64Var is flag.FlagSet.Float64Var.
func (g Group) Float64Var(p *float64, name string, value float64, usage string) {
	g.fs.Float64Var(p, name, value, usage)
	g.record(name)
}

// BoolVar is flag.FlagSet.BoolVar.
func (g Group) BoolVar(p *bool, name string, value bool, usage string) {
	g.fs.BoolVar(p, name, value, usage)
	g.record(name)
}

// SwitchVar registers a bool flag, false by default, that only the
// command line sets (CommandLineOnly): a destructive switch, such as
// `boards prune --delete`, must be typed for the run that means it, never
// inherited from a shared config file or an exported variable.
func (g Group) SwitchVar(p *bool, name, usage string) {
	*p = false
	g.fs.Var((*commandLineBool)(p), name, usage)
	g.record(name)
}

// CommandLineOnly is implemented by the values of flags that neither the
// environment nor the config file may set (SwitchVar's).
type CommandLineOnly interface {
	commandLineOnly()
}

// commandLineBool is SwitchVar's value: a bool flag.
type commandLineBool bool

func (b *commandLineBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("parse error")
	}
	*b = commandLineBool(v)
	return nil
}

func (b *commandLineBool) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(bool(*b))
}

func (*commandLineBool) IsBoolFlag() bool { return true }
func (*commandLineBool) commandLineOnly() {}

// DurationVar is flag.FlagSet.DurationVar.
func (g Group) DurationVar(p *time.Duration, name string, value time.Duration, usage string) {
	g.fs.DurationVar(p, name, value, usage)
	g.record(name)
}

// Var is flag.FlagSet.Var.
func (g Group) Var(v flag.Value, name, usage string) {
	g.fs.Var(v, name, usage)
	g.record(name)
}

// Func is flag.FlagSet.Func.
func (g Group) Func(name, usage string, fn func(string) error) {
	g.fs.Func(name, usage, fn)
	g.record(name)
}

// Uint64Var is flag.FlagSet.Uint64Var.
func (g Group) Uint64Var(p *uint64, name string, value uint64, usage string) {
	g.fs.Uint64Var(p, name, value, usage)
	g.record(name)
}
