package report_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/window_boundary/report"
)

// Children are this test binary re-executed, each making one hit at the
// instant it is handed (the demonstration's cross-process run).
func TestMain(m *testing.M) {
	childproc.RunIfChild(report.Roles())
	os.Exit(m.Run())
}

// The figures the chapter states, for 30 per hour with a GCRA burst of 5.
func TestFigures(t *testing.T) {
	tests := []struct {
		name                string
		edge, paced, random int
	}{
		{"fixed window", 60, 30, 46},
		{"sliding log", 30, 30, 30},
		{"sliding counter", 30, 59, 30},
		{"GCRA / token bucket", 6, 34, 33},
	}
	rep, err := report.Demo(report.DefaultConfig())
	require.NoError(t, err)
	require.True(t, rep.Pass(), "errors: %v", rep.Errors)
	require.Len(t, rep.Rows, len(tests))
	for i, tt := range tests {
		row := rep.Rows[i]
		assert.Equal(t, tt.name, row.Name)
		assert.Equal(t, tt.edge, row.Edge, "%s: edge", tt.name)
		assert.Equal(t, tt.paced, row.Paced, "%s: paced", tt.name)
		assert.Equal(t, tt.random, row.Random, "%s: random", tt.name)
	}
	fixed := rep.Rows[0]
	assert.Equal(t, []int{1, 29, 30}, fixed.EdgeAccepts, "accepted at t0, one second before the reset, at the reset")
	assert.Equal(t, 59, fixed.EdgeInSecond, "59 within one second")
	counter := rep.Rows[2]
	assert.Equal(t, 1, counter.WronglyAllowed, "sliding counter against the exact count, random traffic")
	assert.Equal(t, 15, counter.Refused, "sliding counter against the exact count, random traffic")
}

// A demonstration that lost its claim must fail.
func TestReportFailsOnABrokenClaim(t *testing.T) {
	c := report.DefaultConfig()
	c.Burst = 1 // GCRA then stays within limit + 1, still within its bound
	rep, err := report.Demo(c)
	require.NoError(t, err)
	assert.True(t, rep.Pass())
	rep.Rows[1].Edge = rep.Rows[1].BoundValue + 1
	assert.False(t, rep.Rows[1].Pass())
	rep.Errors = append(rep.Errors, "injected")
	assert.False(t, rep.Pass())
	var out strings.Builder
	rep.Print(&out)
	assert.Contains(t, out.String(), "FAIL: injected")
}

// The checked-in charts are what the code draws now.
func TestFigureIsFresh(t *testing.T) {
	for _, f := range []struct {
		name  string
		write func(io.Writer, report.Config) error
	}{{"window-boundary.svg", report.WriteSVG}, {"sliding-weight.svg", report.WriteWeightSVG}} {
		var buf, again bytes.Buffer
		require.NoError(t, f.write(&buf, report.DefaultConfig()))
		require.NoError(t, f.write(&again, report.DefaultConfig()))
		require.Equal(t, buf.String(), again.String(), "%s must be deterministic", f.name)
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", "figures", f.name))
		require.NoError(t, err, "run make figures")
		assert.True(t, bytes.Equal(got, buf.Bytes()), "docs/figures/%s is stale: run make figures", f.name)
	}
}
