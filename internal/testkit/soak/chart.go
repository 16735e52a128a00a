package soak

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteChart draws each metric of samples against the minutes of the run
// into path, an SVG file: one panel per metric, the samples as a line, the
// least-squares line after the warm-up dashed over them, the fault moments
// as grey vertical marks.
func WriteChart(path, title string, samples []Sample, warmup time.Duration, slopes []Slope, faults []time.Duration) error {
	const cols = 3
	rows := (len(Metrics) + cols - 1) / cols
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, m := range Metrics {
		p := plot.New()
		sl := slopes[i]
		unit := m.Unit
		if unit != "" {
			unit = " " + unit
		}
		verdict := "flat"
		if !sl.Flat {
			verdict = "NOT FLAT"
		}
		p.Title.Text = fmt.Sprintf("%s%s\nslope %+.3g/h, %s", m.Name, unit, sl.PerHour, verdict)
		p.Title.TextStyle.Font.Size = vg.Points(8)
		p.X.Label.Text = "minutes"
		p.X.Tick.Label.Font.Size = vg.Points(7)
		p.Y.Tick.Label.Font.Size = vg.Points(7)
		p.X.Label.TextStyle.Font.Size = vg.Points(7)
		p.Add(plotter.NewGrid())
		var pts plotter.XYs
		hi := 0.0
		for _, s := range samples {
			if s.Procs == 0 && i < 3 {
				continue
			}
			v := m.Value(s)
			if math.IsNaN(v) {
				continue
			}
			hi = max(hi, v)
			pts = append(pts, plotter.XY{X: s.At.Minutes(), Y: v})
		}
		p.Y.Min = 0
		p.Y.Max = hi*1.15 + 1e-9
		for _, f := range faults {
			mark, err := plotter.NewLine(plotter.XYs{{X: f.Minutes(), Y: 0}, {X: f.Minutes(), Y: p.Y.Max}})
			if err != nil {
				return err
			}
			mark.Color = color.Gray{Y: 200}
			mark.Width = vg.Points(0.5)
			p.Add(mark)
		}
		if len(pts) > 0 {
			l, err := plotter.NewLine(pts)
			if err != nil {
				return err
			}
			l.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
			l.Width = vg.Points(0.8)
			p.Add(l)
		}
		if sl.Mean != 0 || sl.PerHour != 0 {
			// The fitted line passes through the window's mean at its
			// middle.
			x0, x1 := warmup.Minutes(), samples[len(samples)-1].At.Minutes()
			mid := (x0 + x1) / 2
			at := func(x float64) float64 { return sl.Mean + sl.PerHour*(x-mid)/60 }
			fit, err := plotter.NewLine(plotter.XYs{{X: x0, Y: at(x0)}, {X: x1, Y: at(x1)}})
			if err != nil {
				return err
			}
			fit.Color = color.RGBA{R: 214, G: 39, B: 40, A: 255}
			fit.Dashes = []vg.Length{vg.Points(3), vg.Points(2)}
			fit.Width = vg.Points(1)
			p.Add(fit)
		}
		plots[i/cols][i%cols] = p
	}
	const w, h = 10 * vg.Inch, 8 * vg.Inch
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	head := vg.Points(14)
	fnt := plot.DefaultFont
	fnt.Size = vg.Points(11)
	dc.FillText(draw.TextStyle{Color: color.Black, Font: fnt, Handler: plot.DefaultTextHandler, XAlign: draw.XCenter},
		vg.Point{X: w / 2, Y: h - head}, title)
	dc.Max.Y -= head + vg.Points(4)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6, PadTop: vg.Millimeter * 2,
		PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, dc)
	for r := range plots {
		for col, p := range plots[r] {
			if p != nil {
				p.Draw(canvases[r][col])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("soak: chart: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("soak: chart %s: %w", path, err)
	}
	return f.Close()
}
