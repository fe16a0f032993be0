package windowboundary

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
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
	const width, height, left, right, top, bottom = 900, 420, 60, 250, 56, 60
	r := ratelab.Rule{Name: "weight", Limit: int64(c.Limit), Window: c.Window, Algorithm: ratelab.SlidingCounter}
	from, to := c.T0.Add(c.Window*3/4), c.T0.Add(2*c.Window)
	x := func(t time.Time) float64 {
		return left + float64(t.Sub(from))/float64(to.Sub(from))*float64(width-left-right)
	}
	ymax := int64(2*c.Limit + 5)
	y := func(n int64) float64 {
		return float64(height-bottom) - float64(n)/float64(ymax)*float64(height-top-bottom)
	}
	weighted := func(st algorithm.Sliding, t time.Time) (int64, error) {
		_, d, err := st.Take(r, t)
		if err != nil || !d.Allowed {
			return r.Limit, err
		}
		return r.Limit - d.Remaining - 1, nil
	}
	// feed takes the requests before t into st.
	type run struct {
		st       algorithm.Sliding
		reqs     []time.Time
		next     int
		accepted []time.Time
	}
	feed := func(rn *run, t time.Time) error {
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
	paced := Paced(c.Limit, c.Window, c.T0)
	burst, all := &run{reqs: paced[:c.Limit]}, &run{reqs: paced}
	var lines [3]strings.Builder // the burst's weight, the paced weight, the trailing-window truth
	point := func(b *strings.Builder, t time.Time, n int64) {
		if b.Len() == 0 {
			fmt.Fprintf(b, "M%.1f %.1f", x(t), y(n))
		} else {
			fmt.Fprintf(b, " H%.1f V%.1f", x(t), y(n))
		}
	}
	for t := from; !t.After(to); t = t.Add(c.Window / 120) {
		if err := feed(burst, t); err != nil {
			return err
		}
		if err := feed(all, t); err != nil {
			return err
		}
		for i, rn := range []*run{burst, all} {
			n, err := weighted(rn.st, t)
			if err != nil {
				return err
			}
			point(&lines[i], t, n)
		}
		var inWindow int64
		for _, a := range all.accepted {
			if a.After(t.Add(-c.Window)) && a.Before(t) {
				inWindow++
			}
		}
		point(&lines[2], t, inWindow)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="20" y="22" font-size="15" font-weight="bold">How the sliding-window counter weighs the previous window (limit %d per %s)</text>`+"\n", c.Limit, short(c.Window))
	fmt.Fprintf(&b, `<text x="20" y="40" fill="#555">weighted count = previous window's count × the share of it still in the trailing %s + this window's count</text>`+"\n", short(c.Window))
	for n := int64(0); n <= ymax; n += 10 {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%d</text>`+"\n",
			left, y(n), width-right, y(n), left-6, y(n)+4, n)
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#c00" stroke-dasharray="6 3"/><text x="%d" y="%.1f" fill="#c00">limit %d</text>`+"\n",
		left, y(r.Limit), width-right, y(r.Limit), left+4, y(r.Limit)-6, r.Limit)
	for _, t := range []time.Time{c.T0.Add(c.Window), to} {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="2 3"/><text x="%.1f" y="%d" text-anchor="middle" fill="#555">%s</text>`+"\n",
			x(t), top, x(t), height-bottom, x(t), height-bottom+16, "t0 + "+short(t.Sub(c.T0)))
	}
	styles := []struct{ color, dash, label string }{
		{"#2ca02c", "6 4", "weighted count, the burst alone"},
		{"#2ca02c", "", "weighted count, burst + paced"},
		{"#9467bd", "", "accepted in the trailing " + short(c.Window)},
	}
	for i, st := range styles {
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`+"\n", lines[i].String(), st.color, st.dash)
		ly := top + 20 + i*22
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			width-right+10, ly, width-right+34, ly, st.color, st.dash, width-right+40, ly+4, st.label)
	}
	inHour := 0
	for _, t := range all.accepted {
		if !t.Before(from) {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="#1f4e8c"/>`+"\n", x(t), float64(height-bottom)-5)
		}
		if !t.Before(c.T0.Add(c.Window-time.Second)) && t.Before(c.T0.Add(2*c.Window-time.Second)) {
			inHour++
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1f4e8c">● a request the counter accepted: %d in the %s from t0 + %s − 1 s, against a limit of %d</text>`+"\n",
		left, height-14, inHour, short(c.Window), short(c.Window), c.Limit)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
