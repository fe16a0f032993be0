package report

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"

	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// WriteSVG draws the edge pattern one dot per request, one row per
// algorithm: the request that opens the window at t0, the limit requests
// one second before the reset, and the limit requests at the reset, on a
// time axis broken after t0 so that the two seconds around the reset fill
// the chart. A filled dot is an accepted request, a hollow one a refused
// request; each row ends with how many the algorithm accepted in those two
// seconds. It uses only the standard library, and the same inputs give
// the same bytes.
func WriteSVG(w io.Writer, c Config) error {
	algs := windowboundary.All(c.Limit, c.Window, c.Burst)
	edge := windowboundary.Edge(c.Limit, c.Window, c.T0)
	var b strings.Builder
	edgeHeader(&b, c, len(algs))
	for i, a := range algs {
		if err := edgeRow(&b, c, i, a, edge); err != nil {
			return err
		}
	}
	edgeFooter(&b, c, len(algs), len(edge))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// The edge chart's layout, in pixels: a label column, the column of t0,
// a gap for the broken axis, then the columns of the second before the
// reset and of the reset (perRow dots a row, rowsPer rows), and the count.
const (
	edgeLeft, edgeLabelW, edgeOpenW, edgeGap = 20, 190, 50, 100
	edgePitch, edgePerRow, edgeRowsPer       = 13, 15, 2
	edgeLaneH, edgeTop                       = 56, 92
	edgeColW                                 = edgePerRow*edgePitch + 20
	edgeXOpen                                = edgeLeft + edgeLabelW
	edgeXBefore                              = edgeXOpen + edgeOpenW + edgeGap
	edgeXReset                               = edgeXBefore + edgeColW + 10
	edgeXCount                               = edgeXReset + edgeColW + 10
)

// edgeColors are the rows' colors, in the order of All.
var edgeColors = [...]string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}

// edgeHeader opens the SVG for rows algorithms and draws the title and
// the column heads.
func edgeHeader(b *strings.Builder, c Config, rows int) {
	width, height := edgeXCount+150, edgeTop+rows*edgeLaneH+70
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="22" font-size="15" font-weight="bold">The edge pattern, one dot per request: limit %d per %s</text>`+"\n", edgeLeft, c.Limit, dur(c.Window))
	heads := []struct {
		x, w int
		text string
	}{
		{edgeXOpen, edgeOpenW, "t0"},
		{edgeXBefore, edgeColW, fmt.Sprintf("t0 + %s − 1 s", dur(c.Window))},
		{edgeXReset, edgeColW, fmt.Sprintf("t0 + %s: the reset", dur(c.Window))},
	}
	for _, h := range heads {
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", h.x+h.w/2, edgeTop-28, h.text)
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc"/>`+"\n", h.x+h.w/2, edgeTop-20, h.x+h.w/2, edgeTop-12)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">… %s later</text>`+"\n", edgeXOpen+edgeOpenW+edgeGap/2, edgeTop-28, dur(c.Window))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">accepted in</text><text x="%d" y="%d" text-anchor="middle" font-weight="bold">these 2 s</text>`+"\n",
		edgeXCount+60, edgeTop-36, edgeXCount+60, edgeTop-22)
}

// edgeRow feeds the edge pattern to algorithm a, the i-th row, and draws
// a dot per request and the count accepted in the two seconds around the
// reset. It returns the first store error a met.
func edgeRow(b *strings.Builder, c Config, i int, a windowboundary.Algorithm, edge []time.Time) error {
	y0, color := edgeTop+i*edgeLaneH, edgeColors[i]
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", edgeLeft, y0-6, edgeXCount+140-edgeLeft, edgeLaneH-8, []string{"#fafafa", "#ffffff"}[i%2])
	fmt.Fprintf(b, `<text x="%d" y="%d" font-weight="bold" fill="%s">%s</text>`+"\n", edgeLeft+6, y0+18, color, esc(a.Name()))
	reset := c.T0.Add(c.Window)
	var before, at, inTwo int
	for _, t := range edge {
		ok := a.AllowAt(t)
		var x, k int
		switch {
		case t.Equal(c.T0):
			x, k = edgeXOpen+edgeOpenW/2-edgePitch/2, 0
		case t.Before(reset):
			x, k = edgeXBefore+10, before
			before++
		default:
			x, k = edgeXReset+10, at
			at++
		}
		cx, cy := x+(k%edgePerRow)*edgePitch+edgePitch/2, y0+8+(k/edgePerRow%edgeRowsPer)*edgePitch+edgePitch/2
		if !ok {
			fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="#999"/>`+"\n", cx, cy)
			continue
		}
		if !t.Equal(c.T0) {
			inTwo++
		}
		fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="5" fill="%s"/>`+"\n", cx, cy, color)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" font-size="15" font-weight="bold" fill="%s">%d</text>`+"\n", edgeXCount+60, y0+26, color, inTwo)
	if l, ok := a.(*windowboundary.Limited); ok {
		return l.Err()
	}
	return nil
}

// edgeFooter draws the key below rows rows, and says how the chart was made.
func edgeFooter(b *strings.Builder, c Config, rows, requests int) {
	ly := edgeTop + rows*edgeLaneH + 20
	fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="5" fill="#555"/><text x="%d" y="%d">accepted</text>`+"\n", edgeLeft+10, ly, edgeLeft+22, ly+4)
	fmt.Fprintf(b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="#999"/><text x="%d" y="%d">refused</text>`+"\n", edgeLeft+100, ly, edgeLeft+112, ly+4)
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#555">Each algorithm is a fresh file store fed the same %d requests in time order; GCRA has a burst of %d.</text>`+"\n", edgeLeft, ly+28, requests, c.Burst)
}

func esc(s string) string { return html.EscapeString(s) }
