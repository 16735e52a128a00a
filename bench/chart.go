package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteCurve draws the load curve of r's fixed-rate runs (rostrum-dev bench
// --rates) into path, an SVG file: on top the latency percentiles (ms, log
// scale) against the offered load as a fraction of the flat-out rate, below
// the processor's and redis-server's CPU seconds per million events.
func WriteCurve(r *Report, path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".svg") {
		return fmt.Errorf("bench: --chart %s: only .svg is written", path)
	}
	var p50, p99, p999, cpu, rcpu plotter.XYs
	for _, res := range r.Results {
		if res.Mode != modeRate || res.Latency == nil || res.OfferedFraction == 0 {
			continue
		}
		x := res.OfferedFraction
		p50 = append(p50, plotter.XY{X: x, Y: max(res.Latency.P50, 0.1)})
		p99 = append(p99, plotter.XY{X: x, Y: max(res.Latency.P99, 0.1)})
		p999 = append(p999, plotter.XY{X: x, Y: max(res.Latency.P999, 0.1)})
		cpu = append(cpu, plotter.XY{X: x, Y: res.CPUSecondsPerMEvents})
		rcpu = append(rcpu, plotter.XY{X: x, Y: res.RedisCPUSecondsPerMEvents})
	}
	if len(p50) == 0 {
		return fmt.Errorf("bench: --chart %s: no fixed-rate run to draw (use --rates)", path)
	}
	lat := plot.New()
	lat.Title.Text = "rostrum: latency from a room's newest event in the batch to its output record"
	lat.X.Label.Text = "offered load (fraction of the flat-out rate)"
	lat.Y.Label.Text = "ms (log scale)"
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	lat.Add(plotter.NewGrid())
	if err := plotutil.AddLinePoints(lat, "p50", p50, "p99", p99, "p99.9", p999); err != nil {
		return err
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	cost := plot.New()
	cost.Title.Text = "CPU per million events"
	cost.X.Label.Text = lat.X.Label.Text
	cost.Y.Label.Text = "CPU seconds"
	cost.Y.Min = 0
	cost.Add(plotter.NewGrid())
	if err := plotutil.AddLinePoints(cost, "rostrum process", cpu, "redis-server", rcpu); err != nil {
		return err
	}
	cost.Legend.Top = true

	const w, h = 7 * vg.Inch, 8 * vg.Inch
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Centimeter, PadTop: vg.Millimeter * 4, PadBottom: vg.Millimeter * 4,
		PadLeft: vg.Millimeter * 4, PadRight: vg.Millimeter * 6}
	plots := [][]*plot.Plot{{lat}, {cost}}
	canvases := plot.Align(plots, tiles, dc)
	lat.Draw(canvases[0][0])
	cost.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: --chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("bench: --chart %s: %w", path, err)
	}
	return f.Close()
}
