package report

import (
	"fmt"
	"math"
	"strings"
)

// LineChart is a chart of lines over a shared x axis on a log scale, one panel per group of
// series, with an optional horizontal reference line (a target) in every panel.
type LineChart struct {
	Title          string
	XLabel, YLabel string
	// XTicks are the x values marked on the axis, labelled by XTickLabel.
	XTicks     []float64
	XTickLabel func(float64) string
	YMin, YMax float64
	Reference  *Reference
	Panels     []LinePanel
}

// Reference is a horizontal line at Y, labelled.
type Reference struct {
	Y     float64
	Label string
}

// LinePanel is one panel: a title and its series.
type LinePanel struct {
	Title  string
	Series []Series
}

// Series is one line; Color is any SVG colour.
type Series struct {
	Name   string
	Color  string
	Points []Point
}

// Point is one point of a series.
type Point struct{ X, Y float64 }

// SVG draws the chart, the panels side by side in rows of three and a legend of the first
// panel's series below them.
func (c LineChart) SVG() string {
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, x := range c.XTicks {
		xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
	}
	if !(xlo > 0 && xhi > xlo) {
		xlo, xhi = 1, 10
	}
	// Half a tick interval of room on either side.
	pad := (math.Log(xhi) - math.Log(xlo)) / float64(max(len(c.XTicks)-1, 1)) / 2
	llo, lhi := math.Log(xlo)-pad, math.Log(xhi)+pad
	ylo, yhi := c.YMin, c.YMax
	if yhi <= ylo {
		ylo, yhi = 0, 1
	}
	n := max(len(c.Panels), 1)
	rows := (n + columns - 1) / columns
	cols := min(n, columns)
	legendH := 26.0
	w, h := float64(cols)*panelW, float64(rows)*panelH+legendH+24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	fmt.Fprintf(&b, `<text x="8" y="16" font-size="13">%s</text>`+"\n", esc(c.Title))
	for i, p := range c.Panels {
		ox, oy := float64(i%columns)*panelW, float64(i/columns)*panelH+24
		pw, ph := panelW-marginL-marginR, panelH-marginT-marginB
		px, py := ox+marginL, oy+marginT
		xAt := func(x float64) float64 { return px + (math.Log(x)-llo)/(lhi-llo)*pw }
		yAt := func(y float64) float64 { return py + (1-(y-ylo)/(yhi-ylo))*ph }
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", px, oy+16, esc(p.Title))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
		for k := range 5 {
			y := ylo + (yhi-ylo)*float64(k)/4
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", px, yAt(y), px+pw, yAt(y), px-4, yAt(y)+4, y)
		}
		for _, x := range c.XTicks {
			label := fmt.Sprint(x)
			if c.XTickLabel != nil {
				label = c.XTickLabel(x)
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", xAt(x), py, xAt(x), py+ph, xAt(x), py+ph+14, esc(label))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px+pw/2, py+ph+30, esc(c.XLabel))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n", ox+10, py+ph/2, ox+10, py+ph/2, esc(c.YLabel))
		if r := c.Reference; r != nil && r.Y >= ylo && r.Y <= yhi {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#555" stroke-dasharray="4 3"/><text x="%.1f" y="%.1f" font-size="9" fill="#555">%s</text>`+"\n", px, yAt(r.Y), px+pw, yAt(r.Y), px+4, yAt(r.Y)-3, esc(r.Label))
		}
		for _, s := range p.Series {
			var pts []string
			for _, pt := range s.Points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(pt.X), yAt(pt.Y)))
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), s.Color)
			for _, pt := range s.Points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>%s: %.3f at %s</title></circle>`+"\n", xAt(pt.X), yAt(pt.Y), s.Color, esc(s.Name), pt.Y, esc(fmt.Sprint(pt.X)))
			}
		}
	}
	if len(c.Panels) > 0 {
		ly := float64(rows)*panelH + 24 + 16
		x := 8.0
		for _, s := range c.Panels[0].Series {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", x+4, ly-4, s.Color, x+12, ly, esc(s.Name))
			x += 14 + 7*float64(len(s.Name)) + 16
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}
