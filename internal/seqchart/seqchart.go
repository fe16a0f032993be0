// Package seqchart draws a sequence diagram as SVG with the standard
// library: one lane per actor, one row per recorded step, top to bottom in
// the order the steps happened. The demonstrations record their steps as
// they observe them, so a chart shows the interleaving that actually ran.
// The same chart gives the same bytes.
package seqchart

import (
	"cmp"
	"fmt"
	"html"
	"io"
	"strings"
)

// Step is one thing an actor did or saw. Bad marks a step where the
// damage shows (drawn in red). A Gap step stands for steps left out: its
// Text is drawn in grey across the lanes, with no box and no number.
type Step struct {
	Lane int
	Text string
	Bad  bool
	Gap  bool
	Num  int // the number drawn at the row's left; 0 means its position
}

// Chart is a titled diagram with its lanes, steps and a closing line.
type Chart struct {
	Title   string
	Lanes   []string
	Steps   []Step
	Outcome string
}

const (
	laneW   = 250
	left    = 44
	top     = 64
	rowH    = 40
	boxH    = 28
	charW   = 6.4 // an estimate of the average width of a 12px sans-serif character
	titleW  = 9.0 // the same of the 15px bold title
	endW    = 7.8 // the same of the 13px bold closing line
	padding = 10
)

// Write draws c.
func Write(w io.Writer, c Chart) error {
	// As wide as the lanes, or the title or closing line if wider: one
	// lane must not cut them off.
	width := left + max(len(c.Lanes)*laneW, textW(c.Title, titleW), textW(c.Outcome, endW)) + 20
	height := top + len(c.Steps)*rowH + 70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", left, esc(c.Title))
	center := func(lane int) int { return left + lane*laneW + laneW/2 }
	bottom := top + len(c.Steps)*rowH + 6
	for i, name := range c.Lanes {
		x := center(i)
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="24" rx="4" fill="#f0f0f0" stroke="#888"/>`+"\n", x-laneW/2+12, top-34, laneW-24)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x, top-17, esc(name))
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#bbb" stroke-dasharray="4 4"/>`+"\n", x, top-10, x, bottom)
	}
	for i, s := range c.Steps {
		y := top + i*rowH
		if s.Gap {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#888" font-style="italic">%s</text>`+"\n", left+12, y+boxH/2+4, esc(s.Text))
			continue
		}
		x := center(s.Lane)
		bw := min(textW(s.Text, charW)+2*padding, laneW-8)
		stroke, fill, color := "#555", "#ffffff", "black"
		if s.Bad {
			stroke, fill, color = "#c00", "#fde8e8", "#900"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#888">%d</text>`+"\n", left-8, y+boxH/2+4, cmp.Or(s.Num, i+1))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="%s" stroke="%s"/>`+"\n", x-bw/2, y, bw, boxH, fill, stroke)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text>`+"\n", x, y+boxH/2+4, color, esc(s.Text))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", left, bottom+30, esc(c.Outcome))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// textW estimates the width of s in characters of width w.
func textW(s string, w float64) int { return int(float64(len([]rune(s))) * w) }

func esc(s string) string { return html.EscapeString(s) }
