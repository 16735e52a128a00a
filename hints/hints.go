package hints

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/rostrumhq/rostrum/board"
	"github.com/rostrumhq/rostrum/board/boarddef"
)

// Rule is one rule as written in YAML under hints: (docs/DESIGN.md §8
// "Hints"), in the file that holds boards:.
type Rule struct {
	Name string `yaml:"name"` // [a-z0-9-]+, 1..64 bytes, unique; required
	When string `yaml:"when"` // a boolean expr expression over the variables; required
	Text string `yaml:"text"` // a text/template over the same variables; required
	Stop bool   `yaml:"stop"` // the chain ends after this rule when it holds; default false
}

// MaxRules is the most rules a chain holds.
const MaxRules = 1000

// Hint is the text of one rule that holds for a member.
type Hint struct {
	Name string
	Text string
}

// Chain is a compiled list of rules. It is immutable and safe for
// concurrent use.
type Chain struct {
	rules  []rule
	boards []*boarddef.Board // the boards the variables read, in configuration order
	vars   []variable
}

type rule struct {
	name string
	when *vm.Program
	text *template.Template
	stop bool
}

var nameRe = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// Compile compiles rules against the variables of boards (those that rank
// user ids give variables). An error names the rule by index and name:
// `hints[1] (unread): when: unknown name weekly_recieved (1:1)`. A chain of
// no rules is nil, with no error.
func Compile(rules []Rule, boards []*boarddef.Board) (*Chain, error) {
	if len(rules) == 0 {
		return nil, nil
	}
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("hints: %d rules, more than %d", len(rules), MaxRules)
	}
	c := &Chain{}
	for _, b := range boards {
		if b.RanksUsers() {
			c.boards = append(c.boards, b)
		}
	}
	vars, err := variables(c.boards)
	if err != nil {
		return nil, err
	}
	c.vars = vars
	env := c.zero()
	data := c.textData(env)
	seen := map[string]int{}
	for i, r := range rules {
		where := fmt.Sprintf("hints[%d] (%s)", i, r.Name)
		if !nameRe.MatchString(r.Name) {
			return nil, fmt.Errorf("hints[%d].name: %q must be 1-64 characters of [a-z0-9-]", i, r.Name)
		}
		if j, dup := seen[r.Name]; dup {
			return nil, fmt.Errorf("hints[%d].name: %q is already the name of hints[%d]", i, r.Name, j)
		}
		seen[r.Name] = i
		if strings.TrimSpace(r.When) == "" {
			return nil, fmt.Errorf("%s: when: a condition is required", where)
		}
		if strings.TrimSpace(r.Text) == "" {
			return nil, fmt.Errorf("%s: text: a text is required", where)
		}
		prog, err := expr.Compile(r.When, expr.Env(env), expr.AsBool())
		if err != nil {
			return nil, fmt.Errorf("%s: when: %w", where, err)
		}
		tm, err := template.New(r.Name).Option("missingkey=error").Parse(r.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: text: %w", where, err)
		}
		if err := checkFields(tm, data); err != nil {
			return nil, fmt.Errorf("%s: text: %w", where, err)
		}
		// A text that fails on a member ranked nowhere would fail for most.
		if err := tm.Execute(io.Discard, data); err != nil {
			return nil, fmt.Errorf("%s: text: %w", where, err)
		}
		c.rules = append(c.rules, rule{name: r.Name, when: prog, text: tm, stop: r.Stop})
	}
	return c, nil
}

// Boards returns the names of the boards whose standings Eval reads, in
// configuration order: every board that ranks user ids.
func (c *Chain) Boards() []string {
	out := make([]string, len(c.boards))
	for i, b := range c.boards {
		out[i] = b.Name()
	}
	return out
}

// Variables returns the names of the variables the rules may use, in the
// order of the boards.
func (c *Chain) Variables() []string {
	out := make([]string, len(c.vars))
	for i, v := range c.vars {
		out[i] = v.name
	}
	return out
}

// Eval runs the chain for one member whose standings on c.Boards() are ms
// (board.Store.Standings; a board missing from ms counts as not ranked):
// the hints of the rules that hold, in order, up to the first that holds
// with stop. A rule that fails when evaluated does not hold; its error is
// returned (naming the rule) beside the hints.
func (c *Chain) Eval(ms board.MemberStandings) ([]Hint, []error) {
	env := c.env(ms)
	var data map[string]any
	hints := []Hint{}
	var errs []error
	for _, r := range c.rules {
		out, err := expr.Run(r.when, env)
		if err != nil {
			errs = append(errs, fmt.Errorf("hint %s: when: %w", r.name, err))
			continue
		}
		if holds, _ := out.(bool); !holds {
			continue
		}
		if data == nil {
			data = c.textData(env)
		}
		var sb strings.Builder
		if err := r.text.Execute(&sb, data); err != nil {
			errs = append(errs, fmt.Errorf("hint %s: text: %w", r.name, err))
			continue
		}
		hints = append(hints, Hint{Name: r.name, Text: sb.String()})
		if r.stop {
			break
		}
	}
	return hints, errs
}

// variable is one name a rule may use: a total or rank of one ranking.
type variable struct {
	name    string
	board   int // index into Chain.boards
	window  int // index into the board's standings
	rank    bool
	decimal bool // the board's scale is 10, 100 or 1000: a float64
}

// VarName returns the variable a board's total goes by: its name with '-'
// as '_'. Board names are [a-z0-9-], so the mapping is one to one.
func VarName(boardName string) string { return strings.ReplaceAll(boardName, "-", "_") }

// variables lists the variables of boards and refuses two of one name.
func variables(boards []*boarddef.Board) ([]variable, error) {
	var out []variable
	owner := map[string]string{} // variable → what it is, for the error
	add := func(v variable, what string) error {
		if prev, dup := owner[v.name]; dup {
			return fmt.Errorf("hints: variable %s would be both %s and %s; rename one of the boards", v.name, prev, what)
		}
		owner[v.name] = what
		out = append(out, v)
		return nil
	}
	for bi, b := range boards {
		dec := b.Scale() > 1
		base := VarName(b.Name())
		names := []string{base}
		windows := b.Windows()
		if b.Kind() == boarddef.Windows {
			for _, w := range windows {
				names = append(names, base+"_"+w)
			}
		}
		for k, n := range names {
			j, what := 0, "board "+b.Name()+"'s total"
			if k > 0 {
				j, what = k-1, "board "+b.Name()+"'s total in window "+windows[k-1]
			}
			if err := add(variable{name: n, board: bi, window: j, decimal: dec}, what); err != nil {
				return nil, err
			}
			if err := add(variable{name: "rank_" + n, board: bi, window: j, rank: true}, strings.Replace(what, "total", "rank", 1)); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// zero is the environment of a member ranked nowhere: every variable at 0
// of its type, which is what type-checks the conditions.
func (c *Chain) zero() map[string]any {
	return c.env(board.MemberStandings{})
}

// env returns the variables of a member whose standings are ms.
func (c *Chain) env(ms board.MemberStandings) map[string]any {
	byBoard := make(map[string]*board.Standings, len(ms.Boards))
	for i := range ms.Boards {
		byBoard[ms.Boards[i].Board] = &ms.Boards[i]
	}
	env := make(map[string]any, len(c.vars))
	for _, v := range c.vars {
		b := c.boards[v.board]
		var s board.Standing
		if bs := byBoard[b.Name()]; bs != nil && v.window < len(bs.Standings) {
			s = bs.Standings[v.window]
		}
		switch {
		case v.rank:
			env[v.name] = int(s.Rank)
		case v.decimal:
			env[v.name] = float64(s.Total) / float64(b.Scale())
		default:
			env[v.name] = int(s.Total)
		}
	}
	return env
}

// Number is how a template prints a decimal total: exact decimal text
// (12.5, 1000000), never an exponent.
type Number float64

// String writes n in the fewest digits that read back as n.
func (n Number) String() string { return strconv.FormatFloat(float64(n), 'f', -1, 64) }

// textData is env as a template reads it: decimals as Number.
func (c *Chain) textData(env map[string]any) map[string]any {
	data := make(map[string]any, len(env))
	for k, v := range env {
		if f, ok := v.(float64); ok {
			data[k] = Number(f)
		} else {
			data[k] = v
		}
	}
	return data
}

// checkFields refuses a template that names a field that is no variable,
// wherever it stands (an {{if}} branch that a member ranked nowhere skips
// included).
func checkFields(t *template.Template, data map[string]any) error {
	var errs []error
	check := func(name string) {
		if _, ok := data[name]; !ok {
			errs = append(errs, fmt.Errorf("unknown name %s", name))
		}
	}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, x := range n.Nodes {
					walk(x)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.WithNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.TemplateNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, cmd := range n.Cmds {
					walk(cmd)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			check(n.Ident[0])
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.VariableNode:
			if len(n.Ident) > 1 && n.Ident[0] == "$" {
				check(n.Ident[1])
			}
		}
	}
	for _, tt := range t.Templates() {
		if tt.Tree != nil {
			walk(tt.Tree.Root)
		}
	}
	return errors.Join(errs...)
}
