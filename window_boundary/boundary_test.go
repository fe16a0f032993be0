package windowboundary_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

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
