package main

import (
	"encoding/json"
	"io"
)

// writeReport prints a benchmark's report to w: as indented JSON with
// --json, else as its table.
func writeReport(w io.Writer, asJSON bool, rep interface{ WriteTable(io.Writer) error }) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(w)
}
