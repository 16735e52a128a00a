// Package examples holds rostrum's example configuration files, embedded so
// that `rostrum demo` runs them without a file on disk.
package examples

import _ "embed"

// BoardsYAML is boards.yaml: a leaderboard for every seed scenario (gift
// ranking over the last 7 days, a weekly board with first-reached ties and
// action counts, trade totals over several windows, hour/day/week/month
// boards), under the boards: key of a config file.
//
//go:embed boards.yaml
var BoardsYAML []byte
