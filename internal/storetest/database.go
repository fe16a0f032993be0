package storetest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

// Exact has 8 goroutines send 60 hits each to one key of s, for every
// algorithm under a limit (and burst) of 400, and fails unless exactly
// 400 are allowed: a store that loses or double-counts under contention
// shows it here.
func Exact(t *testing.T, s ratelab.Store) {
	for _, a := range ratelab.Algorithms() {
		r := ratelab.Rule{Name: "hot", Limit: 400, Window: time.Hour, Algorithm: a, Burst: 400}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 60 {
					d, err := s.TakeAt(context.Background(), r, Key, T0)
					if err != nil || d.NotCounted != nil {
						t.Error(err, d.NotCounted)
						return
					}
					if d.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int64(400), allowed.Load(), "%s: allowed of 480 hits at a limit of 400", a)
	}
}

// Sweeper is a store whose over states a sweep deletes in batches.
type Sweeper interface {
	ratelab.Store
	SweepAt(ctx context.Context, now time.Time) (int64, error)
}

// Sweep fills s with batch + 5 windows of the original rule, a sliding
// log and a live window, and checks that sweeps delete what is over — and
// nothing within MaxSkew of its end — and keep what is live.
func Sweep(t *testing.T, s Sweeper, batch int) {
	ctx := context.Background()
	for i := range batch + 5 {
		Take(t, s, Original, fmt.Sprint("old", i), T0)
	}
	log := ratelab.Rule{Name: "log", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog}
	Take(t, s, log, "old", T0)
	Take(t, s, Original, "live", T0.Add(50*time.Minute))
	n, err := s.SweepAt(ctx, T0.Add(60*time.Minute+30*time.Second)) // the old windows ended at 60 min
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "only the log, full again at 1 min, is swept; no window within MaxSkew of its end")
	n, err = s.SweepAt(ctx, T0.Add(62*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, int64(batch+5), n)
	d := Take(t, s, Original, "live", T0.Add(62*time.Minute))
	assert.Equal(t, int64(28), d.Remaining, "the live window was kept")
}

// Outage checks a store whose server cannot be reached: newStore makes one
// with a policy and a logger. Fail-open lets the hit through uncounted,
// fail-closed returns ErrUnavailable; both log a line naming pkg.
func Outage(t *testing.T, pkg string, newStore func(ratelab.FailPolicy, *slog.Logger) ratelab.Store) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		var logs bytes.Buffer
		s := newStore(policy, slog.New(slog.NewTextHandler(&logs, nil)))
		d, err := s.TakeAt(context.Background(), Original, Key, T0)
		if policy == ratelab.FailOpen {
			require.NoError(t, err)
			assert.True(t, d.Allowed)
			assert.Error(t, d.NotCounted)
		} else {
			assert.ErrorIs(t, err, ratelab.ErrUnavailable)
		}
		assert.Contains(t, logs.String(), pkg)
	}
}
