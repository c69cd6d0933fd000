package replay

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WriteHTML writes the report as one self-contained HTML page: the summary table, tiler's savings
// against each baseline, and three plots drawn by gonum/plot as inline SVG — $/h over time per
// policy with the clairvoyant bound, GPUs bought against GPUs requested, and pending pods. The
// page loads nothing: no script, no style sheet, no font (the SVG names font families the browser
// resolves locally).
func (r *Report) WriteHTML(w io.Writer) error {
	var table bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		return err
	}
	cost, err := r.costPlot()
	if err != nil {
		return err
	}
	gpus, err := r.seriesPlot("GPUs bought and requested", "GPUs", true, func(s Sample) float64 { return float64(s.GPUs) })
	if err != nil {
		return err
	}
	pending, err := r.seriesPlot("Pending pods", "pods", false, func(s Sample) float64 { return float64(s.Pending) })
	if err != nil {
		return err
	}
	return htmlPage.Execute(w, map[string]any{"Report": r, "Table": table.String(), "Savings": r.savings(),
		"Plots": []template.HTML{cost, gpus, pending}})
}

// saving is tiler's saving against one baseline.
type saving struct {
	Baseline         string
	Dollars, Percent float64
}

func (r *Report) savings() []saving {
	t := r.Result(PolicyTiler)
	if t == nil {
		return nil
	}
	var out []saving
	for _, x := range r.Results {
		if x.Policy != PolicyTiler && x.Cost > 0 {
			out = append(out, saving{Baseline: x.Policy, Dollars: x.Cost - t.Cost, Percent: 100 * (1 - t.Cost/x.Cost)})
		}
	}
	return out
}

// costPlot is $/h over time per policy, with the bound as a step line.
func (r *Report) costPlot() (template.HTML, error) {
	p := newPlot("Cost over time", "$/h")
	for i, x := range r.Results {
		pts := make(plotter.XYs, len(x.Series))
		for j, s := range x.Series {
			pts[j] = plotter.XY{X: s.At.Hours(), Y: s.CostPerHour}
		}
		if err := addLine(p, x.Policy, pts, i); err != nil {
			return "", err
		}
	}
	if r.Bound != nil && len(r.Bound.Series) > 0 {
		var pts plotter.XYs
		for j, s := range r.Bound.Series {
			end := r.Window.Hours()
			if j+1 < len(r.Bound.Series) {
				end = r.Bound.Series[j+1].At.Hours()
			}
			pts = append(pts, plotter.XY{X: s.At.Hours(), Y: s.CostPerHour}, plotter.XY{X: end, Y: s.CostPerHour})
		}
		if err := addLine(p, PolicyClairvoyant, pts, len(r.Results)); err != nil {
			return "", err
		}
	}
	return svg(p)
}

// seriesPlot plots one sampled value per policy; with needed, also the GPUs the live pods request.
func (r *Report) seriesPlot(title, unit string, needed bool, value func(Sample) float64) (template.HTML, error) {
	p := newPlot(title, unit)
	for i, x := range r.Results {
		pts := make(plotter.XYs, len(x.Series))
		for j, s := range x.Series {
			pts[j] = plotter.XY{X: s.At.Hours(), Y: value(s)}
		}
		if err := addLine(p, x.Policy, pts, i); err != nil {
			return "", err
		}
	}
	if needed && len(r.Results) > 0 {
		x := r.Results[0]
		pts := make(plotter.XYs, len(x.Series))
		for j, s := range x.Series {
			pts[j] = plotter.XY{X: s.At.Hours(), Y: s.GPUsNeeded}
		}
		if err := addLine(p, "requested", pts, len(r.Results)); err != nil {
			return "", err
		}
	}
	return svg(p)
}

func newPlot(title, unit string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "hours"
	p.Y.Label.Text = unit
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

func addLine(p *plot.Plot, name string, pts plotter.XYs, i int) error {
	if len(pts) == 0 {
		return nil
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i)
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// svg renders the plot as an inline SVG element (the XML prelude dropped).
func svg(p *plot.Plot) (template.HTML, error) {
	c := vgsvg.New(9*vg.Inch, 3.5*vg.Inch)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("rendering SVG: %w", err)
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	return template.HTML(s), nil // #nosec G203: drawn by gonum/plot from numbers and policy names
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>tiler replay: {{.Report.Workload}}</title>
<style>body{font-family:sans-serif;margin:2em;max-width:1100px}pre{background:#f6f6f6;padding:1em;overflow-x:auto}
table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:right}</style>
</head><body>
<h1>What a day costs: {{.Report.Workload}}</h1>
<p>{{.Report.Pods}} pods over {{.Report.Window}}, catalog {{.Report.Catalog}}. Every policy replays the same workload
through Tiler's decisions in virtual time; the clairvoyant bound is a lower bound no policy can beat.</p>
<h2>Summary</h2>
<pre>{{.Table}}</pre>
{{if .Savings}}<h2>Savings of tiler</h2>
<table><tr><th>against</th><th>$ saved</th><th>%</th></tr>
{{range .Savings}}<tr><td>{{.Baseline}}</td><td>{{printf "%.2f" .Dollars}}</td><td>{{printf "%.0f" .Percent}} %</td></tr>
{{end}}</table>{{end}}
<h2>Over time</h2>
{{range .Plots}}<div>{{.}}</div>
{{end}}
</body></html>
`))
