package windowboundary_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/childproc"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// Children are this test binary re-executed, each making one hit at the
// instant it is handed.
func TestMain(m *testing.M) {
	childproc.RunIfChild(windowboundary.Roles())
	os.Exit(m.Run())
}

var (
	t0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	w  = time.Hour
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestMaxIn(t *testing.T) {
	acc := []time.Time{at(0), at(10 * time.Minute), at(time.Hour), at(time.Hour + time.Second)}
	n, from := windowboundary.MaxIn(acc, time.Hour)
	assert.Equal(t, 3, n, "both ends of [t0, t0+1h] are included")
	assert.Equal(t, t0, from)
	n, _ = windowboundary.MaxIn(acc, time.Second)
	assert.Equal(t, 2, n)
	n, _ = windowboundary.MaxIn(nil, time.Hour)
	assert.Equal(t, 0, n)
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
	rep, err := windowboundary.Demo(windowboundary.DefaultConfig())
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

// The counter counts refused requests too, so hammering buys nothing: a
// client that keeps sending one request a second after its first 30 gets
// nothing more through for hours, where the exact log gives it 30 an hour.
func TestCounterMakesHammeringSelfDefeating(t *testing.T) {
	var reqs []time.Time
	for s := time.Duration(0); s < 3*time.Hour; s += time.Second {
		reqs = append(reqs, at(s))
	}
	counted := windowboundary.Run(windowboundary.New(ratelab.SlidingCounter, 30, w, 0), reqs)
	assert.Len(t, counted, 30, "sliding counter")
	logged := windowboundary.Run(windowboundary.New(ratelab.SlidingLog, 30, w, 0), reqs)
	assert.Len(t, logged, 90, "sliding log: 30 in each of the three hours")
}

func TestAlgorithmsTakeTimeAsAParameter(t *testing.T) {
	g := windowboundary.New(ratelab.GCRA, 30, w, 5)
	for i := range 5 {
		assert.True(t, g.AllowAt(t0), "burst request %d", i+1)
	}
	assert.False(t, g.AllowAt(t0), "the burst is spent")
	assert.False(t, g.AllowAt(at(119*time.Second)))
	assert.True(t, g.AllowAt(at(120*time.Second)), "one more every window/limit")

	l := windowboundary.New(ratelab.SlidingLog, 2, w, 0)
	assert.True(t, l.AllowAt(t0))
	assert.True(t, l.AllowAt(at(time.Minute)))
	assert.False(t, l.AllowAt(at(time.Hour)), "t0 is still inside [t0+1h−1h, t0+1h]")
	assert.True(t, l.AllowAt(at(time.Hour+time.Millisecond)), "the log keeps milliseconds")
	require.NoError(t, l.Err())
}

// A demonstration that lost its claim must fail.
func TestReportFailsOnABrokenClaim(t *testing.T) {
	c := windowboundary.DefaultConfig()
	c.Burst = 1 // GCRA then stays within limit + 1, still within its bound
	rep, err := windowboundary.Demo(c)
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

// The edge with real processes and the real shared stores: each process
// is told its instant, nobody sleeps, and every algorithm decides across
// processes exactly as the in-memory store decides in one.
// (Redis runs the same in package beyondonehost, which registers it.) A
// limit of 5 keeps it to 11 processes an algorithm: the edge is the same
// at any limit.
func TestCrossProcessBurst(t *testing.T) {
	const limit = 5
	for _, a := range windowboundary.All(limit, w, 2) {
		l := a.(*windowboundary.Limited)
		t.Run(string(l.Rule.Algorithm), func(t *testing.T) {
			want, _ := windowboundary.MaxIn(windowboundary.Run(windowboundary.New(l.Rule.Algorithm, limit, w, 2), windowboundary.Edge(limit, w, t0)), w)
			b, err := windowboundary.CrossProcessBurst(windowboundary.Target{Store: harness.File, Dir: t.TempDir()}, l.Rule, t0)
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

// The checked-in charts are what the code draws now.
func TestFigureIsFresh(t *testing.T) {
	for _, f := range []struct {
		name  string
		write func(io.Writer, windowboundary.Config) error
	}{{"window-boundary.svg", windowboundary.WriteSVG}, {"sliding-weight.svg", windowboundary.WriteWeightSVG}} {
		var buf, again bytes.Buffer
		require.NoError(t, f.write(&buf, windowboundary.DefaultConfig()))
		require.NoError(t, f.write(&again, windowboundary.DefaultConfig()))
		require.Equal(t, buf.String(), again.String(), "%s must be deterministic", f.name)
		got, err := os.ReadFile(filepath.Join("..", "docs", "figures", f.name))
		require.NoError(t, err, "run make figures")
		assert.True(t, bytes.Equal(got, buf.Bytes()), "docs/figures/%s is stale: run make figures", f.name)
	}
}
