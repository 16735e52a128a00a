package flicker

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the report as a table: one row per scenario and
// strategy.
func (r *Report) WriteTable(w io.Writer) error {
	if r.Rules != "" {
		fmt.Fprintf(w, "flicker benchmark over recorded meetings: ranking rules %s, top-%d, lists merged every %s; a member truly belongs after %s in the raw top-N\n",
			r.Rules, r.N, r.Batch, r.MinStint)
	} else {
		fmt.Fprintf(w, "flicker benchmark: seed %d, %s per meeting, top-%d, lists merged every %s; a member truly belongs after %s in the raw top-N\n",
			r.Seed, r.Duration, r.N, r.Batch, r.MinStint)
	}
	margin := fmt.Sprintf("%d volume steps", r.Margin)
	if r.Margin < 0 {
		margin = "off"
	}
	fmt.Fprintf(w, "hysteresis: dwell %s, grace %s, margin %s\n\n", r.Dwell, r.Grace, margin)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tstrategy\tchanges/min\treplaced/min\tmoved/min\tappear p50\tappear p95\tstale share\toutputs/min\trepublished/min\t")
	for _, s := range r.Scenarios {
		for _, x := range s.Results {
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%.1f\t%.2f s\t%.2f s\t%.1f%%\t%.1f\t%.1f\t\n", s.Name, x.Strategy,
				x.ChangesPerMin, x.ReplacedPerMin, x.MovedPerMin, x.AppearP50, x.AppearP95, 100*x.StaleShare,
				x.OutputsPerMin, x.RepublishedPerMin)
		}
	}
	return tw.Flush()
}
