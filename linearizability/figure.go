package linearizability

import (
	"fmt"
	"io"
	"slices"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab/internal/seqchart"
)

// WriteSVG draws h as a sequence diagram: one lane per process, in the
// order the processes first hit, one row per hit in the order the hits
// were called, and the first hit that no order of the hits before it can
// explain drawn in red. It is meant for a history whose hits did not
// overlap — one client, one hit at a time — whose drawing is the same on
// every run. A history of more than maxRows hits is drawn with only its
// first two, the four before the red one and the one after it, and its
// last; a grey line says which hits were left out.
func WriteSVG(w io.Writer, h History, title string) error {
	ops := slices.Clone(h.Ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return compare(a.Call, b.Call) })
	bad := firstUnexplained(ops)
	lane := map[int]int{}
	c := seqchart.Chart{Title: title}
	shown := rowsShown(len(ops), bad)
	for i, op := range ops {
		if !shown[i] {
			if i == 0 || shown[i-1] {
				j := i
				for !shown[j+1] {
					j++
				}
				c.Steps = append(c.Steps, seqchart.Step{Gap: true, Text: fmt.Sprintf("⋮  hits %d to %d left out", i+1, j+1)})
			}
			continue
		}
		l, ok := lane[op.ClientId]
		if !ok {
			l = len(c.Lanes)
			lane[op.ClientId] = l
			c.Lanes = append(c.Lanes, fmt.Sprintf("process %d", l+1))
		}
		c.Steps = append(c.Steps, seqchart.Step{Lane: l, Text: fmt.Sprintf("hit %d: %s", i+1, answer(op.Output.(output))), Bad: i == bad, Num: i + 1})
	}
	c.Outcome = "every hit explained, one at a time: linearizable"
	if bad >= 0 {
		before := "hit 1"
		if bad > 1 {
			before = fmt.Sprintf("hits 1 to %d", bad)
		}
		c.Outcome = fmt.Sprintf("after %s, no order explains hit %d's answer: not linearizable", before, bad+1)
	}
	return seqchart.Write(w, c)
}

// maxRows is the most hits WriteSVG draws them all of.
const maxRows = 16

// rowsShown says which of n hits WriteSVG draws, bad being the red one
// (-1 for none): all of up to maxRows; otherwise the first two, the four
// before bad, bad and the one after it, and the last.
func rowsShown(n, bad int) []bool {
	shown := make([]bool, n)
	for i := range shown {
		shown[i] = n <= maxRows || i < 2 || i == n-1 || bad >= 0 && i >= bad-4 && i <= bad+1
	}
	return shown
}

// firstUnexplained returns the index of the first hit of ops (in call
// order) such that ops[:i+1] is not linearizable, or -1.
func firstUnexplained(ops []porcupine.Operation) int {
	for i := range ops {
		if !porcupine.CheckOperations(model, ops[:i+1]) {
			return i
		}
	}
	return -1
}

// answer is what a hit's client was told, in a few words.
func answer(o output) string {
	switch {
	case !o.Known:
		return "no answer"
	case o.Allowed:
		return fmt.Sprintf("allowed, %d left", o.Remaining)
	}
	return fmt.Sprintf("refused, retry in %v", o.RetryAfter)
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
