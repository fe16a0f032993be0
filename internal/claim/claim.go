// Package claim is the one shape of every demonstration's rows — a case,
// what the demonstration claims, what it observed — and the one verdict
// line that ends a demonstration and decides its exit status: a
// demonstration that saw something other than it claims exits non-zero,
// on every run.
package claim

import (
	"fmt"

	"io"
	"text/tabwriter"

	"github.com/ratelab/ratelab/internal/seqchart"
)

// Claim is one row: a case, what is claimed, what was observed, and a
// detail of how it came about that the table shows after the observation
// but that is not compared. A Shown row reports a figure without claiming
// it (say, how many hits a lock-free run lost this time), and always
// passes.
type Claim struct {
	Case, Expected, Observed string
	Detail                   string
	Shown                    bool
	// Trace is what the demonstration observed, step by step, in the
	// order it happened, for a sequence diagram (package seqchart); not
	// compared either.
	Trace []seqchart.Step
}

// Pass reports whether the observation is the claim.
func (c Claim) Pass() bool { return c.Shown || c.Expected == c.Observed }

// Mark is the row's verdict column: ok, FAIL or shown.
func (c Claim) Mark() string {
	switch {
	case c.Shown:
		return "shown"
	case c.Expected != c.Observed:
		return "FAIL"
	}
	return "ok"
}

// All reports whether every claim passes.
func All(cs []Claim) bool {
	for _, c := range cs {
		if !c.Pass() {
			return false
		}
	}
	return true
}

// Table writes the claims as a table whose first column is headed first.
func Table(w io.Writer, first string, cs []Claim) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\texpected\tobserved\tverdict\n", first)
	for _, c := range cs {
		observed := c.Observed
		if c.Detail != "" {
			observed += "; " + c.Detail
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Case, c.Expected, observed, c.Mark())
	}
	tw.Flush()
}

// Verdict ends a demonstration's output with its PASS or FAIL line and
// returns the exit status, 0 or 1.
func Verdict(w io.Writer, pass bool, what string) int {
	if !pass {
		fmt.Fprintln(w, "FAIL: what ran differs from what the demo claims (see what is marked FAIL above)")
		return 1
	}
	fmt.Fprintln(w, "PASS: "+what)
	return 0
}
