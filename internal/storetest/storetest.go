// Package storetest holds the behaviour every ratelab.Store must show, so
// that each store's tests run the same checks against it.
package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

// T0 is the fixed instant the checks start from.
var T0 = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

// Key is the original's key shape.
const Key = "demo-start:ip:203.0.113.7"

// Window checks the fixed-window rules on the store that newStore returns:
// a window continues while reset_at is in the future, reset_at never moves
// inside a window, a window ends exactly at reset_at, and keys are
// independent.
func Window(t *testing.T, newStore func(t *testing.T) ratelab.Store) {
	t.Run("continues and keeps reset_at", func(t *testing.T) {
		s := newStore(t)
		first := hit(t, s, Key, T0)
		second := hit(t, s, Key, T0.Add(30*time.Second))
		third := hit(t, s, Key, T0.Add(59*time.Minute))
		assert.Equal(t, []int64{1, 2, 3}, []int64{first.Count, second.Count, third.Count})
		assert.Equal(t, T0.Add(time.Hour).Unix(), first.ResetAt.Unix())
		assert.True(t, first.ResetAt.Equal(third.ResetAt), "reset_at moved inside a window: %v then %v", first.ResetAt, third.ResetAt)
	})
	t.Run("expires exactly at reset_at", func(t *testing.T) {
		s := newStore(t)
		hit(t, s, Key, T0)
		last := hit(t, s, Key, T0.Add(time.Hour-time.Second))
		assert.Equal(t, int64(2), last.Count, "one second before reset_at")
		next := hit(t, s, Key, T0.Add(time.Hour))
		assert.Equal(t, int64(1), next.Count, "at reset_at a new window starts")
		assert.Equal(t, T0.Add(2*time.Hour).Unix(), next.ResetAt.Unix())
	})
	t.Run("keys are independent", func(t *testing.T) {
		s := newStore(t)
		for range 3 {
			hit(t, s, Key, T0)
		}
		other := hit(t, s, "demo-start:ip:198.51.100.9", T0)
		assert.Equal(t, int64(1), other.Count)
		assert.Equal(t, int64(4), hit(t, s, Key, T0).Count)
	})
	t.Run("rejects a bad window", func(t *testing.T) {
		s := newStore(t)
		for _, w := range []time.Duration{0, -time.Hour, time.Millisecond} {
			_, err := s.HitAt(Key, w, T0)
			assert.Error(t, err, "window %v", w)
		}
	})
}

// CrossInstance hits one key once from each of two store instances, as two
// processes would, and returns the count the second instance reports: 2 for
// a store whose state outlives the instance, 1 for one that keeps it in
// memory. It is the original's test_state_survives_across_instances.
func CrossInstance(t *testing.T, newInstance func(t *testing.T) ratelab.Store) int64 {
	t.Helper()
	hit(t, newInstance(t), Key, T0)
	return hit(t, newInstance(t), Key, T0.Add(30*time.Second)).Count
}

func hit(t *testing.T, s ratelab.Store, key string, at time.Time) ratelab.Hit {
	t.Helper()
	h, err := s.HitAt(key, time.Hour, at)
	require.NoError(t, err)
	require.NoError(t, h.NotCounted, "the store failed open")
	return h
}
