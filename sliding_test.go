package ratelab_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

func TestSlidingStateNext(t *testing.T) {
	h0 := t0.Unix() // an hour boundary
	tests := []struct {
		name string
		prev ratelab.SlidingState
		at   time.Time
		want ratelab.SlidingState
	}{
		{"first hit aligns to the clock", ratelab.SlidingState{}, t0.Add(17 * time.Minute), ratelab.SlidingState{WindowStart: h0, Count: 1}},
		{"same window counts on", ratelab.SlidingState{WindowStart: h0, Count: 4, PrevCount: 9}, t0.Add(time.Minute), ratelab.SlidingState{WindowStart: h0, Count: 5, PrevCount: 9}},
		{"next window shifts", ratelab.SlidingState{WindowStart: h0, Count: 4, PrevCount: 9}, t0.Add(time.Hour), ratelab.SlidingState{WindowStart: h0 + 3600, Count: 1, PrevCount: 4}},
		{"a gap forgets both", ratelab.SlidingState{WindowStart: h0, Count: 4, PrevCount: 9}, t0.Add(2 * time.Hour), ratelab.SlidingState{WindowStart: h0 + 7200, Count: 1}},
		{"a future window (clock stepped back) is dropped", ratelab.SlidingState{WindowStart: h0 + 7200, Count: 40}, t0, ratelab.SlidingState{WindowStart: h0, Count: 1}},
		{"hostile counts are bounded", ratelab.SlidingState{WindowStart: h0, Count: 1 << 50, PrevCount: -3}, t0, ratelab.SlidingState{WindowStart: h0, Count: 1 << 30, PrevCount: 0}},
	}
	for _, tt := range tests {
		got := tt.prev.Next(tt.at, time.Hour)
		assert.Equal(t, tt.want, got, tt.name)
	}
}

func TestSlidingWeightedCountAndRetry(t *testing.T) {
	h0 := t0.Unix()
	// 30 in the previous window; a quarter of this one has passed, so they
	// weigh 30 × 3/4 = 22.5; with 8 here (this hit included): ceil(30.5) = 31.
	st := ratelab.SlidingState{WindowStart: h0, Count: 8, PrevCount: 30}
	now := t0.Add(15 * time.Minute)
	h := st.Hit(now, time.Hour)
	assert.Equal(t, int64(31), h.Count)
	assert.Equal(t, t0.Add(time.Hour).Unix(), h.ResetAt.Unix())
	require.NotNil(t, h.Sliding)

	// One more is allowed when 30(3600−e) + 9·3600 ≤ 30·3600: e ≥ 1080 s.
	assert.Equal(t, t0.Add(1080*time.Second).Unix(), st.RetryAt(now, time.Hour, 30).Unix())
	later := ratelab.SlidingState{WindowStart: h0, Count: 9, PrevCount: 30}.Hit(t0.Add(1080*time.Second), time.Hour)
	assert.Equal(t, int64(30), later.Count, "at the retry instant the next hit is within the limit")

	// A full window: not before the next one, where 30(3600−e) + 3600 ≤ 30·3600: e ≥ 120 s.
	full := ratelab.SlidingState{WindowStart: h0, Count: 30}
	assert.Equal(t, t0.Add(time.Hour+120*time.Second).Unix(), full.RetryAt(now, time.Hour, 30).Unix())
	// A limit of one: the window after next.
	assert.Equal(t, t0.Add(2*time.Hour).Unix(), ratelab.SlidingState{WindowStart: h0, Count: 1}.RetryAt(now, time.Hour, 1).Unix())
}

func TestLimiterUsesSlidingRetry(t *testing.T) {
	st := ratelab.SlidingState{WindowStart: t0.Unix(), Count: 8, PrevCount: 30}
	now := t0.Add(15 * time.Minute)
	l, err := ratelab.NewLimiter(stubStore{hit: st.Hit(now, time.Hour)}, 30, time.Hour)
	require.NoError(t, err)
	d, err := l.AllowAt("k", now)
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 3*time.Minute, d.ResetIn, "Retry-After is when the weighted count has room again")
}

func TestParseAlgorithm(t *testing.T) {
	a, err := ratelab.ParseAlgorithm("sliding")
	require.NoError(t, err)
	assert.Equal(t, ratelab.SlidingCounter, a)
	_, err = ratelab.ParseAlgorithm("leaky")
	assert.ErrorContains(t, err, "use fixed or sliding")
}
