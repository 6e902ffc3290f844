package load

import (
	"fmt"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// Chart writes a chart of throughput against clients to path, one line
// per backend, tracker count and client driver; the file's extension
// (.svg, .png, .pdf, …) picks the format.
func Chart(results []Result, title, path string) error {
	type series struct {
		name          string
		backend, dash int // colour by backend, dashes by tracker count
		perl          bool
		pts           plotter.XYs
	}
	var backends []string
	var trackers []int
	var lines []*series
	find := func(name string, r Result) *series {
		for _, s := range lines {
			if s.name == name {
				return s
			}
		}
		if !slices.Contains(backends, r.Backend) {
			backends = append(backends, r.Backend)
		}
		if !slices.Contains(trackers, r.Trackers) {
			trackers = append(trackers, r.Trackers)
		}
		s := &series{name: name, backend: slices.Index(backends, r.Backend),
			dash: slices.Index(trackers, r.Trackers), perl: r.Driver == "perl"}
		lines = append(lines, s)
		return s
	}
	var clients []int
	top := 0.0
	for _, r := range results {
		// The figure the line prints, so a chart redrawn from the lines
		// (ParseLine) is the same chart.
		ops := math.Round(r.OpsPerS)
		top = max(top, ops)
		name := fmt.Sprintf("%s, %d tracker", r.Backend, r.Trackers)
		if r.Trackers != 1 {
			name += "s"
		}
		if r.Driver != "" && r.Driver != "go" {
			name += " (" + r.Driver + " client)"
		}
		s := find(name, r)
		s.pts = append(s.pts, plotter.XY{X: float64(r.Clients), Y: ops})
		if !slices.Contains(clients, r.Clients) {
			clients = append(clients, r.Clients)
		}
	}
	slices.Sort(clients)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "concurrent clients"
	p.Y.Label.Text = "uploads + get_paths per second"
	p.Y.Min = 0
	// Room above the lines for the legend, one row per line.
	p.Y.Max = top * (1.15 + 0.07*float64(len(lines)))
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, c := range clients {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: fmt.Sprint(c)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
			}
		}
		return ts
	})
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	for _, s := range lines {
		slices.SortFunc(s.pts, func(a, b plotter.XY) int { return int(a.X - b.X) })
		l, pts, err := plotter.NewLinePoints(s.pts)
		if err != nil {
			return fmt.Errorf("load: chart: %w", err)
		}
		c := plotutil.Color(s.backend)
		l.Color, pts.Color = c, c
		pts.Shape = plotutil.Shape(s.dash)
		if s.dash > 0 {
			l.Dashes = []vg.Length{vg.Points(5 * float64(s.dash)), vg.Points(3)}
		}
		if s.perl {
			l.Width = vg.Points(2.5)
		}
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	p.BackgroundColor = color.White
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("load: chart: %w", err)
	}
	return nil
}
