package windowboundary

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// trailing returns the step function "accepted in the window-long span
// ending at t" as its breakpoints over [from, to].
func trailing(accepted []time.Time, window time.Duration, from, to time.Time) (ts []time.Time, ys []int) {
	var cuts []time.Time
	for _, a := range accepted {
		cuts = append(cuts, a, a.Add(window+time.Nanosecond))
	}
	cuts = append(cuts, from, to)
	sort.Slice(cuts, func(i, j int) bool { return cuts[i].Before(cuts[j]) })
	for _, t := range cuts {
		if t.Before(from) || t.After(to) {
			continue
		}
		n := 0
		for _, a := range accepted {
			if !a.After(t) && !a.Before(t.Add(-window)) {
				n++
			}
		}
		ts, ys = append(ts, t), append(ys, n)
	}
	return ts, ys
}

// WriteSVG draws, for the edge pattern, how many requests each algorithm
// has accepted in the window-long span ending at each instant, from one
// window before the reset to one window after, with the limit and the
// resets marked. It uses only the standard library and the same inputs
// give the same bytes.
func WriteSVG(w io.Writer, c Config) error {
	const width, height, left, right, top, bottom = 760, 380, 60, 190, 30, 50
	from, to := c.T0.Add(-time.Duration(float64(c.Window)*0.1)), c.T0.Add(2*c.Window)
	span := to.Sub(from)
	ymax := 2*c.Limit + 5
	x := func(t time.Time) float64 {
		return left + float64(t.Sub(from))/float64(span)*float64(width-left-right)
	}
	y := func(n int) float64 {
		return float64(height-bottom) - float64(n)/float64(ymax)*float64(height-top-bottom)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">Accepted in the trailing %v — edge pattern, limit %d</text>`+"\n", left, c.Window, c.Limit)
	// Axes and grid.
	for n := 0; n <= ymax; n += 10 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n",
			left, y(n), width-right, y(n), left-6, y(n)+4, n)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c00" stroke-dasharray="6 3"/><text x="%d" y="%.1f" fill="#c00">limit %d</text>`+"\n",
		left, y(c.Limit), width-right, y(c.Limit), width-right+6, y(c.Limit)+4, c.Limit)
	for k := 0; k <= 2; k++ {
		t := c.T0.Add(time.Duration(k) * c.Window)
		label := "t0: window opens"
		if k > 0 {
			label = fmt.Sprintf("t0+%v: reset", time.Duration(k)*c.Window)
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="2 3"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n",
			x(t), top, x(t), height-bottom, x(t), height-bottom+16, label)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, height-bottom, width-right, height-bottom)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">time</text>`+"\n", (left+width-right)/2, height-12)

	colors := []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd"}
	edge := Edge(c.Limit, c.Window, c.T0)
	for i, a := range All(c.Limit, c.Window, c.Burst) {
		ts, ys := trailing(Run(a, edge), c.Window, from, to)
		var path strings.Builder
		for j := range ts {
			if j == 0 {
				fmt.Fprintf(&path, "M%.1f %.1f", x(ts[j]), y(ys[j]))
				continue
			}
			fmt.Fprintf(&path, " H%.1f V%.1f", x(ts[j]), y(ys[j]))
		}
		fmt.Fprintf(&path, " H%.1f", x(to))
		peak := 0
		for _, v := range ys {
			peak = max(peak, v)
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", path.String(), colors[i])
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="3" fill="%s"/><text x="%d" y="%d">%s (peak %d)</text>`+"\n",
			width-right+6, top+40+i*20, colors[i], width-right+22, top+45+i*20, a.Name(), peak)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
