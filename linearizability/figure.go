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
// every run.
func WriteSVG(w io.Writer, h History, title string) error {
	ops := slices.Clone(h.Ops)
	slices.SortFunc(ops, func(a, b porcupine.Operation) int { return compare(a.Call, b.Call) })
	bad := firstUnexplained(ops)
	lane := map[int]int{}
	c := seqchart.Chart{Title: title}
	for i, op := range ops {
		l, ok := lane[op.ClientId]
		if !ok {
			l = len(c.Lanes)
			lane[op.ClientId] = l
			c.Lanes = append(c.Lanes, fmt.Sprintf("process %d", l+1))
		}
		c.Steps = append(c.Steps, seqchart.Step{Lane: l, Text: fmt.Sprintf("hit %d: %s", i+1, answer(op.Output.(output))), Bad: i == bad})
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
