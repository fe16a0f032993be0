package windowboundary

import (
	"fmt"
	"html"
	"io"
	"strings"
	"time"
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
	const (
		left, labelW, openW, gap = 20, 190, 50, 100
		pitch, perRow, rowsPer   = 13, 15, 2
		laneH, top               = 56, 92
	)
	colW := perRow*pitch + 20
	xOpen := left + labelW
	xBefore := xOpen + openW + gap
	xReset := xBefore + colW + 10
	xCount := xReset + colW + 10
	algs := All(c.Limit, c.Window, c.Burst)
	width, height := xCount+150, top+len(algs)*laneH+70

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">The edge pattern, one dot per request: limit %d per %s</text>`+"\n", left, c.Limit, short(c.Window))
	heads := []struct {
		x    int
		w    int
		text string
	}{
		{xOpen, openW, "t0"},
		{xBefore, colW, fmt.Sprintf("t0 + %s − 1 s", short(c.Window))},
		{xReset, colW, fmt.Sprintf("t0 + %s: the reset", short(c.Window))},
	}
	for _, h := range heads {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", h.x+h.w/2, top-28, h.text)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ccc"/>`+"\n", h.x+h.w/2, top-20, h.x+h.w/2, top-12)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#888">… %s later</text>`+"\n", xOpen+openW+gap/2, top-28, short(c.Window))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">accepted in</text><text x="%d" y="%d" text-anchor="middle" font-weight="bold">these 2 s</text>`+"\n",
		xCount+60, top-36, xCount+60, top-22)
	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	edge := Edge(c.Limit, c.Window, c.T0)
	reset := c.T0.Add(c.Window)
	for i, a := range algs {
		y0 := top + i*laneH
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y0-6, xCount+140-left, laneH-8, []string{"#fafafa", "#ffffff"}[i%2])
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-weight="bold" fill="%s">%s</text>`+"\n", left+6, y0+18, colors[i], esc(a.Name()))
		var before, at, inTwo int
		for _, t := range edge {
			ok := a.AllowAt(t)
			var x, k int
			switch {
			case t.Equal(c.T0):
				x, k = xOpen+openW/2-pitch/2, 0
			case t.Before(reset):
				x, k = xBefore+10, before
				before++
			default:
				x, k = xReset+10, at
				at++
			}
			cx, cy := x+(k%perRow)*pitch+pitch/2, y0+8+(k/perRow%rowsPer)*pitch+pitch/2
			if ok {
				if !t.Equal(c.T0) {
					inTwo++
				}
				fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="%s"/>`+"\n", cx, cy, colors[i])
			} else {
				fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="#999"/>`+"\n", cx, cy)
			}
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="15" font-weight="bold" fill="%s">%d</text>`+"\n", xCount+60, y0+26, colors[i], inTwo)
		if l, ok := a.(*Limited); ok && l.Err() != nil {
			return l.Err()
		}
	}
	ly := top + len(algs)*laneH + 20
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="#555"/><text x="%d" y="%d">accepted</text>`+"\n", left+10, ly, left+22, ly+4)
	fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="4.5" fill="white" stroke="#999"/><text x="%d" y="%d">refused</text>`+"\n", left+100, ly, left+112, ly+4)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">Each algorithm is a fresh file store fed the same %d requests in time order; GCRA has a burst of %d.</text>`+"\n", left, ly+28, len(edge), c.Burst)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

// short writes a duration without its zero minutes and seconds: 1h, 90m.
func short(d time.Duration) string {
	s := d.String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}
