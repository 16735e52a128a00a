// Package hints turns a member's leaderboard numbers into personalised
// lines of text (docs/DESIGN.md §8 "Hints"; seed 001's "filter the three
// actions by several conditions into a line of text for each user"): an
// ordered chain of rules, each a condition and a text template, evaluated in
// order, where a rule that holds adds its text and, with stop, ends the
// chain.
//
// # Variables
//
// Every board that ranks user ids gives each rule two variables, named like
// the board with '-' as '_':
//
//	<board>        the member's total in the board's current period (total
//	               boards: its total; rolling boards: its window; windows
//	               boards: its first, shortest window); 0 when not ranked
//	rank_<board>   its rank there, 1-based; 0 when not ranked
//
// and a windows board also <board>_<window> and rank_<board>_<window> for
// each of its windows ("item_trades_10m"). A total is an int on a board of
// scale 1 and a float64 (12.5) on a board of scale 10, 100 or 1000; a rank is
// an int. A board whose name starts with a digit is read as $env["7d_gifts"]
// in a condition and as index . "7d_gifts" in a template. Two boards whose
// variables would share a name (boards "x" and "rank-x") stop Compile.
//
// # Rules
//
// A condition (when) is an expression of github.com/expr-lang/expr that
// must be a boolean; a text is a text/template. Both are compiled and
// type-checked against the variables by Compile, once, at start-up: an
// unknown name, a type error or a syntax error is an error naming the rule.
// A rule that fails when evaluated (an integer division by zero) does not
// hold, and Eval returns its error beside the hints.
//
// The package imports board/boarddef (the definitions), board (the
// standings it reads), expr and the standard library; it does no I/O.
package hints
