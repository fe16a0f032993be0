package brokeninmemory_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/lab/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) func() ratelab.Store {
		return func() ratelab.Store { return new(brokeninmemory.Store) }
	}, false)
}

// The test an in-memory store can never pass: two instances are two
// processes' worth of memory, and the second never sees the first's hit.
func TestStateDoesNotSurviveAcrossInstances(t *testing.T) {
	got := storetest.CrossInstance(t, func(*testing.T) ratelab.Store { return new(brokeninmemory.Store) })
	assert.Equal(t, int64(29), got, "a second instance saw the first one's hit; the in-memory store is supposed to be broken across processes")
}

// Inside one process it is correct: 8 goroutines × 500 hits on one key count
// exactly 4000 (run under -race).
func TestConcurrentHitsInOneProcessAreExact(t *testing.T) {
	var s brokeninmemory.Store
	r := storetest.Original
	r.Limit = 1 << 20
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if _, err := s.TakeAt(context.Background(), r, storetest.Key, storetest.T0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	d, err := s.TakeAt(context.Background(), r, storetest.Key, storetest.T0)
	require.NoError(t, err)
	assert.Equal(t, r.Limit-4001, d.Remaining, "remaining after 4001 hits")
}

// MaxKeys bounds the memory: a new key past the bound forgets every state,
// so each key starts over, and a key already held keeps counting.
func TestMaxKeysForgetsEverythingWhenFull(t *testing.T) {
	s := &brokeninmemory.Store{MaxKeys: 2}
	r := storetest.Checked(ratelab.Rule{Name: "r", Limit: 1, Window: time.Hour})
	now := time.Unix(1_780_000_000, 0)
	take := func(key string) bool {
		d, err := s.TakeAt(context.Background(), r, key, now)
		require.NoError(t, err)
		return d.Allowed
	}
	for _, tt := range []struct {
		key  string
		want bool
	}{{"a", true}, {"b", true}, {"a", false}, {"b", false}, {"c", true}, {"a", true}, {"c", false}} {
		assert.Equal(t, tt.want, take(tt.key), "hit of %q", tt.key)
	}
}

// Fail-local's in-process store, bounded at FallbackKeys states: a client
// refused there stays refused until that many other keys have been seen,
// and then starts over — the bound fail-policy.md states.
func TestAFallbackStoreIsBoundedAtFallbackKeys(t *testing.T) {
	gone := errors.New("gone")
	f, err := ratelab.WithFailPolicy(storetest.Stub{Err: fmt.Errorf("x: %w: %w", ratelab.ErrUnavailable, gone)}, ratelab.FailLocal,
		&brokeninmemory.Store{MaxKeys: brokeninmemory.FallbackKeys}, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	r := storetest.Checked(ratelab.Rule{Name: "r", Limit: 1, Window: time.Hour})
	now := time.Unix(1_780_000_000, 0)
	allowed := func(key string) bool {
		d, err := f.TakeAt(context.Background(), r, key, now)
		require.NoError(t, err)
		return d.Allowed
	}
	require.True(t, allowed("client"))
	require.False(t, allowed("client"))
	for i := range brokeninmemory.FallbackKeys - 1 {
		allowed(fmt.Sprint("other", i))
	}
	assert.False(t, allowed("client"), "within FallbackKeys keys: still refused")
	allowed("one more key")
	assert.True(t, allowed("client"), "past FallbackKeys keys: forgotten, starts over")
	assert.Equal(t, 1<<16, brokeninmemory.FallbackKeys)
}
