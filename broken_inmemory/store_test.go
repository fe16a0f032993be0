package brokeninmemory_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	"github.com/ratelab/ratelab/internal/storetest"
)

func TestWindow(t *testing.T) {
	storetest.Window(t, func(*testing.T) ratelab.Store { return new(brokeninmemory.Store) })
}

// The test an in-memory store can never pass: two instances are two
// processes' worth of memory, and the second never sees the first's hit.
func TestStateDoesNotSurviveAcrossInstances(t *testing.T) {
	got := storetest.CrossInstance(t, func(*testing.T) ratelab.Store { return new(brokeninmemory.Store) })
	assert.Equal(t, int64(1), got, "a second instance saw the first one's hit; the in-memory store is supposed to be broken across processes")
}

// Inside one process it is correct: 8 goroutines × 500 hits on one key count
// exactly 4000 (run under -race).
func TestConcurrentHitsInOneProcessAreExact(t *testing.T) {
	var s brokeninmemory.Store
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				if _, err := s.HitAt(storetest.Key, time.Hour, storetest.T0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	h, err := s.HitAt(storetest.Key, time.Hour, storetest.T0)
	assert.NoError(t, err)
	assert.Equal(t, int64(4001), h.Count)
}
