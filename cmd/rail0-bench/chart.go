package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// binWidth is the chart's time resolution.
const binWidth = 100 * time.Millisecond

var (
	acceptedColor = color.RGBA{R: 0x2b, G: 0x6c, B: 0xb0, A: 0xff}
	refusedColor  = color.RGBA{R: 0xd6, G: 0x3b, B: 0x2f, A: 0xff}
	windowColor   = color.Gray{Y: 0x90}
)

// histograms turns bins into the chart's two layers. One is the total
// height of each bar, drawn in the refusal colour. The other is the
// accepted part, drawn over it. So the 429s show as the red top of each
// bar.
func histograms(bins []bin, width time.Duration) (total, accepted []plotter.HistogramBin) {
	w := width.Seconds()
	for i, b := range bins {
		lo := float64(i) * w
		total = append(total, plotter.HistogramBin{Min: lo, Max: lo + w, Weight: float64(b.Accepted + b.Refused)})
		accepted = append(accepted, plotter.HistogramBin{Min: lo, Max: lo + w, Weight: float64(b.Accepted)})
	}
	return total, accepted
}

// writeChart draws one panel per strategy that ran, on shared axes. It
// writes the chart as a PNG at path.
func writeChart(path, title string, results []result, period time.Duration) error {
	type panel struct {
		r    result
		bins []bin
	}
	var panels []panel
	xMax, yMax := period.Seconds(), 1.0
	for _, r := range results {
		if r.skipped != "" {
			continue
		}
		bins := binSends(r.attempts, r.start, binWidth)
		for _, b := range bins {
			yMax = max(yMax, float64(b.Accepted+b.Refused))
		}
		xMax = max(xMax, float64(len(bins))*binWidth.Seconds())
		panels = append(panels, panel{r, bins})
	}
	if len(panels) == 0 {
		return fmt.Errorf("chart: no strategy ran")
	}
	yMax *= 1.15                   // headroom for the legend
	xMax += 3 * binWidth.Seconds() // room for the last bars
	var ticks []plot.Tick
	for x := 0; float64(x) <= xMax; x++ {
		ticks = append(ticks, plot.Tick{Value: float64(x), Label: fmt.Sprint(x)})
	}

	plots := make([][]*plot.Plot, len(panels))
	for i, pn := range panels {
		p := plot.New()
		s := pn.r.sum
		name := pn.r.label
		if pn.r.processes > 1 {
			name = fmt.Sprintf("%d processes, %s", pn.r.processes, name)
		}
		p.Title.Text = fmt.Sprintf("%s: %d sent, %d x 429, makespan %v",
			name, s.Sent, s.Refused, roundMS(s.Makespan))
		if i == 0 {
			p.Title.Text = title + "\n\n" + p.Title.Text
		}
		p.Title.TextStyle.Font.Size = vg.Points(11)
		p.Y.Label.Text = "requests"
		if i == len(panels)-1 {
			p.X.Label.Text = "seconds since start"
		}
		p.X.Min, p.X.Max = 0, xMax
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Min, p.Y.Max = 0, yMax

		for k := 1; float64(k)*period.Seconds() < xMax; k++ {
			x := float64(k) * period.Seconds()
			l, err := plotter.NewLine(plotter.XYs{{X: x, Y: 0}, {X: x, Y: yMax}})
			if err != nil {
				return err
			}
			l.Color = windowColor
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(l)
		}
		total, accepted := histograms(pn.bins, binWidth)
		refusedH := &plotter.Histogram{Bins: total, Width: binWidth.Seconds(), FillColor: refusedColor}
		acceptedH := &plotter.Histogram{Bins: accepted, Width: binWidth.Seconds(), FillColor: acceptedColor}
		refusedH.LineStyle.Width, acceptedH.LineStyle.Width = 0, 0
		p.Add(refusedH, acceptedH)
		p.Legend.Top = true
		p.Legend.Add("accepted", acceptedH)
		p.Legend.Add("429", refusedH)
		plots[i] = []*plot.Plot{p}
	}

	const panelHeight = 1.9 * vg.Inch
	img := vgimg.New(11*vg.Inch, vg.Length(len(panels))*panelHeight+0.4*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close() // the write's error is the one to report
		return err
	}
	return f.Close()
}
