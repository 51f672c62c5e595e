package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	panelW, panelH = 340.0, 250.0
	marginL        = 48.0
	marginR        = 12.0
	marginT        = 28.0
	marginB        = 36.0
	columns        = 3
)

var routerColors = map[string]string{
	"council-keywords": "#d62728",
	"keyword-overlap":  "#ff7f0e",
	"bm25":             "#9467bd",
	"two-phase":        "#1f77b4",
	"native":           "#17becf",
	"hybrid":           "#2ca02c",
}

// SVG draws routing accuracy (y, 0 to 1) against median latency per query (x, milliseconds on a
// log scale), one panel per dataset and one point per measured router. Skipped, unavailable and
// plumbing rows are not drawn.
func SVG(res *Results) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range res.Rows {
		if r.Status == Measured && r.RoutingAccuracy != nil {
			v := math.Max(r.Latency.P50, 1e-4)
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1e-3, 1
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	n := max(len(res.Datasets), 1)
	rows := (n + columns - 1) / columns
	cols := min(n, columns)
	legendH := 26.0
	w, h := float64(cols)*panelW, float64(rows)*panelH+legendH+24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="8" y="16" font-size="13">Routing accuracy against median latency per query (log scale); one point per router</text>`+"\n")
	for i, ds := range res.Datasets {
		ox, oy := float64(i%columns)*panelW, float64(i/columns)*panelH+24
		panel(&b, res, ds.Name, ox, oy, dlo, dhi)
	}
	// Legend.
	ly := float64(rows)*panelH + 24 + 16
	x := 8.0
	for _, name := range []string{"council-keywords", "keyword-overlap", "bm25", "two-phase", "native", "hybrid"} {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/><text x="%.1f" y="%.1f">%s</text>`+"\n", x+4, ly-4, routerColors[name], x+12, ly, name)
		x += 14 + 7*float64(len(name)) + 16
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func panel(b *strings.Builder, res *Results, dataset string, ox, oy, dlo, dhi float64) {
	pw, ph := panelW-marginL-marginR, panelH-marginT-marginB
	px, py := ox+marginL, oy+marginT
	xAt := func(msv float64) float64 {
		return px + (math.Log10(math.Max(msv, 1e-4))-dlo)/(dhi-dlo)*pw
	}
	yAt := func(acc float64) float64 { return py + (1-acc)*ph }
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="12" font-weight="bold">%s</text>`+"\n", px, oy+16, esc(dataset))
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", px, py, pw, ph)
	for _, a := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := yAt(a)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="end">%.2f</text>`+"\n", px, y, px+pw, y, px-4, y+4, a)
	}
	for d := dlo; d <= dhi; d++ {
		x := px + (d-dlo)/(dhi-dlo)*pw
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/><text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, py, x, py+ph, x, py+ph+14, esc(decade(d)))
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle">median latency (ms)</text>`+"\n", px+pw/2, py+ph+30)
	i := 0
	for _, r := range res.Rows {
		if r.Dataset != dataset || r.Status != Measured || r.RoutingAccuracy == nil {
			continue
		}
		x, y := xAt(r.Latency.P50), yAt(*r.RoutingAccuracy)
		color := routerColors[r.Router]
		if color == "" {
			color = "#333"
		}
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="5" fill="%s"><title>%s: %.3f at %s ms</title></circle>`+"\n", x, y, color, esc(r.Router), *r.RoutingAccuracy, ms(r.Latency.P50))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="9" fill="%s">%s</text>`+"\n", x+7, y-3+float64(i%2)*10, color, esc(r.Router))
		i++
	}
}

func decade(d float64) string {
	v := math.Pow(10, d)
	if d < 0 {
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func esc(s string) string { return html.EscapeString(s) }
