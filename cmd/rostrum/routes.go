package main

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/rostrumhq/rostrum/internal/cli"
	"github.com/rostrumhq/rostrum/route"
)

// routesKey is the config-file key holding the routing rules as a list of
// {env, pattern}; the flag --route (ROSTRUM_ROUTE) holds them as text and,
// when given, replaces the file's list.
const routesKey = "routes"

// routeFlags are the routing settings shared by `rostrum gateway` (where
// each room's callbacks go) and `rostrum run` (which rooms its environment
// accepts): one setting, read the same way by both.
type routeFlags struct {
	rules route.Flag
	def   string
	file  []route.Rule // the config file's routes: list
}

func (r *routeFlags) register(fs *cli.FlagSet) {
	fs.Group("kafka").Sets("Rooms").Var(&r.rules, "route", "routing rule env=regex, first match wins; repeatable or comma-separated (prod=^p-,gray=^g-); config key routes: as a list of {env, pattern}")
	fs.Group("kafka").Tuning().StringVar(&r.def, "route-default", "", "environment of the rooms no --route matches (default: none, such a room is refused)")
}

// read takes the routes: list of the config file at path.
func (r *routeFlags) read(path string) error {
	if path == "" {
		return nil
	}
	b, err := readConfig(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var doc struct {
		Routes []route.Rule `yaml:"routes"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("--config %s: routes: %w", path, err)
	}
	r.file = doc.Routes
	return nil
}

// given reports whether any routing setting was given.
func (r *routeFlags) given() bool { return len(r.rules.Specs) > 0 || r.def != "" || len(r.file) > 0 }

// table compiles the rules: --route's if given, else the file's.
func (r *routeFlags) table() (*route.Table, error) {
	rules, err := r.rules.Rules()
	if err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		rules = r.file
	}
	return route.New(rules, r.def)
}

// runRooms returns the table that says which rooms `rostrum run --env env`
// accepts: the routes, or nil for every room.
func runRooms(r *routeFlags, env string) (*route.Table, error) {
	if !r.given() {
		return nil, nil
	}
	t, err := r.table()
	if err != nil {
		return nil, err
	}
	for _, e := range t.Envs() {
		if e == env {
			return t, nil
		}
	}
	return nil, fmt.Errorf("--route %s routes no room to --env %s", t, env)
}
