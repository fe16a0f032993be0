package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// The weight chart's size and margins, in pixels.
const (
	weightWidth, weightHeight = 900, 420
	weightLeft, weightRight   = 60, 250
	weightTop, weightBottom   = 56, 60
	weightAxisY               = weightHeight - weightBottom // the y of count 0
	weightLegendX             = weightWidth - weightRight   // the plot's right edge, the legend's left
)

// WriteWeightSVG draws how the sliding-window counter weighs the window
// before the current one, on the paced pattern: limit requests in the last
// second of one clock-aligned window, then one each time the counter has
// room. Three lines, read every half minute from the counter's own step
// (package algorithm), probing a copy of its state without counting: the
// count it compares a request with after the burst alone, which decays as
// the burst's window slides out; the same with the paced requests it
// accepted, pinned at the limit; and how many requests it accepted in the
// trailing window — the number the limit is about.
func WriteWeightSVG(w io.Writer, c Config) error {
	g := weightChart{
		c:    c,
		rule: ratelab.Rule{Name: "weight", Limit: int64(c.Limit), Window: c.Window, Algorithm: ratelab.SlidingCounter},
		from: c.T0.Add(c.Window * 3 / 4), to: c.T0.Add(2 * c.Window),
		ymax: int64(2*c.Limit + 5),
	}
	lines, accepted, err := g.sample()
	if err != nil {
		return err
	}
	var b strings.Builder
	g.axes(&b)
	g.legend(&b, lines)
	g.dots(&b, accepted)
	b.WriteString("</svg>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// weightChart is WriteWeightSVG's chart: the rule it runs, the time span
// it shows and the top of its count axis.
type weightChart struct {
	c        Config
	rule     ratelab.Rule
	from, to time.Time
	ymax     int64
}

func (g weightChart) x(t time.Time) float64 {
	return weightLeft + float64(t.Sub(g.from))/float64(g.to.Sub(g.from))*float64(weightWidth-weightLeft-weightRight)
}

func (g weightChart) y(n int64) float64 {
	return float64(weightAxisY) - float64(n)/float64(g.ymax)*float64(weightHeight-weightTop-weightBottom)
}

// sample feeds the paced pattern, and its burst alone, to the counter's
// step and reads the three lines at every sample: the burst's weighted
// count, the whole pattern's, and how many the counter accepted in the
// trailing window. It also returns every request the counter accepted.
func (g weightChart) sample() ([3]string, []time.Time, error) {
	paced := windowboundary.Paced(g.c.Limit, g.c.Window, g.c.T0)
	burst, all := &slidingRun{reqs: paced[:g.c.Limit]}, &slidingRun{reqs: paced}
	var lines [3]strings.Builder // the burst's weight, the paced weight, the trailing-window truth
	for t := g.from; !t.After(g.to); t = t.Add(g.c.Window / 120) {
		for i, rn := range []*slidingRun{burst, all} {
			if err := rn.feed(g.rule, t); err != nil {
				return [3]string{}, nil, err
			}
			n, err := weighted(g.rule, rn.st, t)
			if err != nil {
				return [3]string{}, nil, err
			}
			g.point(&lines[i], t, n)
		}
		g.point(&lines[2], t, all.acceptedIn(t.Add(-g.c.Window), t))
	}
	return [3]string{lines[0].String(), lines[1].String(), lines[2].String()}, all.accepted, nil
}

// point extends a step line to n at t.
func (g weightChart) point(b *strings.Builder, t time.Time, n int64) {
	if b.Len() == 0 {
		fmt.Fprintf(b, "M%.1f %.1f", g.x(t), g.y(n))
	} else {
		fmt.Fprintf(b, " H%.1f V%.1f", g.x(t), g.y(n))
	}
}

// axes opens the SVG and draws the title, the count grid, the limit and
// the two window marks.
func (g weightChart) axes(b *strings.Builder) {
	c, limit := g.c, g.rule.Limit
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", weightWidth, weightHeight, weightWidth, weightHeight)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", weightWidth, weightHeight)
	fmt.Fprintf(b, `<text x="20" y="22" font-size="15" font-weight="bold">How the sliding-window counter weighs the previous window (limit %d per %s)</text>`+"\n", c.Limit, dur(c.Window))
	fmt.Fprintf(b, `<text x="20" y="40" fill="#555">weighted count = previous window's count × the share of it still in the trailing %s + this window's count</text>`+"\n", dur(c.Window))
	for n := int64(0); n <= g.ymax; n += 10 {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n",
			weightLeft, g.y(n), weightLegendX, g.y(n), weightLeft-6, g.y(n)+4, n)
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c00" stroke-dasharray="6 3"/><text x="%d" y="%.1f" fill="#c00">limit %d</text>`+"\n",
		weightLeft, g.y(limit), weightLegendX, g.y(limit), weightLeft+4, g.y(limit)-6, limit)
	for _, t := range []time.Time{c.T0.Add(c.Window), g.to} {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="2 3"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n",
			g.x(t), weightTop, g.x(t), weightAxisY, g.x(t), weightAxisY+16, "t0 + "+dur(t.Sub(c.T0)))
	}
}

// legend draws the three lines, each with its key at the right.
func (g weightChart) legend(b *strings.Builder, lines [3]string) {
	styles := []struct{ color, dash, label string }{
		{"#2ca02c", "6 4", "weighted count, the burst alone"},
		{"#2ca02c", "", "weighted count, burst + paced"},
		{"#9467bd", "", "accepted in the trailing " + dur(g.c.Window)},
	}
	for i, st := range styles {
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", lines[i], st.color, st.dash)
		ly := weightTop + 20 + i*22
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			weightLegendX+10, ly, weightLegendX+34, ly, st.color, st.dash, weightLegendX+40, ly+4, st.label)
	}
}

// dots draws a dot for each accepted request in view, and a footnote
// counting those in the window that starts one second before the reset.
func (g weightChart) dots(b *strings.Builder, accepted []time.Time) {
	c := g.c
	inWindow := 0
	for _, t := range accepted {
		if !t.Before(g.from) {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#1f4e8c"/>`+"\n", g.x(t), float64(weightAxisY)-5)
		}
		if !t.Before(c.T0.Add(c.Window-time.Second)) && t.Before(c.T0.Add(2*c.Window-time.Second)) {
			inWindow++
		}
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#1f4e8c">● a request the counter accepted: %d in the %s from t0 + %s − 1 s, against a limit of %d</text>`+"\n",
		weightLeft, weightHeight-14, inWindow, dur(c.Window), dur(c.Window), c.Limit)
}

// slidingRun feeds requests, in time order, to the sliding counter's step
// and keeps the ones it accepted.
type slidingRun struct {
	st       algorithm.Sliding
	reqs     []time.Time
	next     int
	accepted []time.Time
}

// feed takes the requests before t.
func (rn *slidingRun) feed(r ratelab.Rule, t time.Time) error {
	for ; rn.next < len(rn.reqs) && rn.reqs[rn.next].Before(t); rn.next++ {
		var d ratelab.Decision
		var err error
		if rn.st, d, err = rn.st.Take(r, rn.reqs[rn.next]); err != nil {
			return err
		}
		if d.Allowed {
			rn.accepted = append(rn.accepted, rn.reqs[rn.next])
		}
	}
	return nil
}

// acceptedIn counts the accepted requests strictly between from and to.
func (rn *slidingRun) acceptedIn(from, to time.Time) int64 {
	var n int64
	for _, a := range rn.accepted {
		if a.After(from) && a.Before(to) {
			n++
		}
	}
	return n
}

// weighted is the count the counter in state st compares a request at t
// with: probed on a copy of st, so nothing is counted.
func weighted(r ratelab.Rule, st algorithm.Sliding, t time.Time) (int64, error) {
	_, d, err := st.Take(r, t)
	if err != nil || !d.Allowed {
		return r.Limit, err
	}
	return r.Limit - d.Remaining - 1, nil
}
