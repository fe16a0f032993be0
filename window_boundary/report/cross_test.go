package report_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
	"github.com/ratelab/ratelab/window_boundary/report"
)

// The edge with real processes and the real shared stores: each process
// is told its instant, nobody sleeps, and every algorithm decides across
// processes exactly as the in-memory store decides in one.
// (Redis runs the same in package beyondonehost, which registers it.) A
// limit of 5 keeps it to 11 processes an algorithm: the edge is the same
// at any limit.
func TestCrossProcessBurst(t *testing.T) {
	const limit = 5
	t0 := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	for _, a := range windowboundary.All(limit, time.Hour, 2) {
		l := a.(*windowboundary.Limited)
		t.Run(string(l.Rule.Algorithm), func(t *testing.T) {
			want, _ := windowboundary.MaxIn(windowboundary.Run(windowboundary.New(l.Rule.Algorithm, limit, time.Hour, 2), windowboundary.Edge(limit, time.Hour, t0)), time.Hour)
			b, err := report.CrossProcessBurst(report.Target{Store: harness.File, Dir: t.TempDir()}, l.Rule, t0)
			require.NoError(t, err)
			assert.Equal(t, 2*limit+1, b.Requests)
			assert.Equal(t, want, b.MaxInWindow, "across processes as in one")
			if l.Rule.Algorithm == ratelab.FixedWindow {
				assert.Equal(t, 2*limit, b.Accepted, "fixed window: 2 × limit")
				assert.Equal(t, time.Hour, b.Span)
			}
		})
	}
}
