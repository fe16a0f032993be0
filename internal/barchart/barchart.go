// Package barchart draws horizontal stacked bars as SVG with the standard
// library only, for the figures in docs/figures: the same chart gives the
// same bytes.
package barchart

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// Chart is one figure: a bar per row, each bar the sum of its segments,
// and a dashed line at Limit.
type Chart struct {
	Title    string
	Segments []string // the legend: one name per segment, in stacking order
	Bars     []Bar
	Limit    int
	Unit     string // what the axis counts, as "hits allowed"
}

// Bar is one row: its label and one value per segment.
type Bar struct {
	Label  string
	Values []int
}

var colors = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}

// Write draws c as SVG on w.
func Write(w io.Writer, c Chart) error {
	const width, left, right, top, rowHeight, barHeight = 760, 300, 30, 86, 44, 24
	height := top + len(c.Bars)*rowHeight + 50
	xmax := c.Limit
	for _, b := range c.Bars {
		sum := 0
		for _, v := range b.Values {
			sum += v
		}
		xmax = max(xmax, sum)
	}
	xmax = (xmax/10 + 1) * 10
	x := func(n int) float64 { return left + float64(n)/float64(xmax)*float64(width-left-right) }
	esc := html.EscapeString

	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&s, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&s, `<text x="10" y="20" font-size="14">%s</text>`+"\n", esc(c.Title))
	for i, name := range c.Segments {
		lx := 10 + i*330
		fmt.Fprintf(&s, `<rect x="%d" y="34" width="12" height="12" fill="%s"/><text x="%d" y="45">%s</text>`+"\n", lx, colors[i%len(colors)], lx+18, esc(name))
	}
	bottom := top + len(c.Bars)*rowHeight
	for n := 0; n <= xmax; n += 10 {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/><text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n",
			x(n), top-6, x(n), bottom, x(n), bottom+16, n)
	}
	for i, b := range c.Bars {
		y := top + i*rowHeight + (rowHeight-barHeight)/2
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barHeight/2+4, esc(b.Label))
		at := 0
		for j, v := range b.Values {
			if v > 0 {
				fmt.Fprintf(&s, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/><text x="%.1f" y="%d" text-anchor="middle" fill="white">%d</text>`+"\n",
					x(at), y, x(at+v)-x(at), barHeight, colors[j%len(colors)], (x(at)+x(at+v))/2, y+barHeight/2+4, v)
			}
			at += v
		}
	}
	fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="6 3"/><text x="%.1f" y="%d" text-anchor="middle">limit %d</text>`+"\n",
		x(c.Limit), top-10, x(c.Limit), bottom, x(c.Limit), top-14, c.Limit)
	fmt.Fprintf(&s, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, bottom, width-right, bottom)
	fmt.Fprintf(&s, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(xmax/2), bottom+36, esc(c.Unit))
	s.WriteString("</svg>\n")
	_, err := io.WriteString(w, s.String())
	return err
}
