package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// Through a Sentinel URL the store follows a real failover: the hits the
// replica confirmed (WAIT) survive the primary's death, and the client
// finds the promoted replica by itself. After it, WAIT for one replica
// can no longer succeed — the new primary has none — so a fail-closed
// store with WaitReplicas refuses until a replica rejoins.
func TestSentinelFailover(t *testing.T) {
	redisserver.Need(t)
	pair, err := redisserver.StartPair()
	require.NoError(t, err)
	t.Cleanup(pair.Stop)
	sentinel, err := redisserver.StartSentinel(pair)
	require.NoError(t, err)
	t.Cleanup(sentinel.Stop)

	client, err := redisstore.NewClient(sentinel.URL(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	store := func(wait int) *redisstore.Store {
		// The first WAIT after a full sync can take up to a second (the
		// replica's first acknowledgement): the timeouts leave room for it.
		s, err := redisstore.New(client, redisstore.Options{Timeout: 5 * time.Second,
			WaitReplicas: wait, WaitTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		return s
	}
	ctx := context.Background()
	rule := storetest.Checked(ratelab.Rule{Name: "sentinel", Limit: 30, Window: time.Hour})
	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	const key = "ip:203.0.113.7"

	confirmed := store(1)
	for i := range 10 {
		d, err := confirmed.TakeAt(ctx, rule, key, now)
		require.NoError(t, err, "hit %d before the failover", i+1)
		require.Equal(t, int64(30-(i+1)), d.Remaining)
	}

	require.NoError(t, pair.KillPrimary())
	plain := store(0)
	var d ratelab.Decision
	// Until the sentinel promotes the replica, hits fail (the primary is
	// gone, the replica is read-only) and nothing is counted.
	err = poll.Until(30*time.Second, 50*time.Millisecond, func() (err error) {
		d, err = plain.TakeAt(ctx, rule, key, now)
		return err
	})
	require.NoError(t, err, "no failover")
	assert.Equal(t, int64(19), d.Remaining, "the 11th hit, after the failover: the 10 confirmed hits were kept")

	_, err = confirmed.TakeAt(ctx, rule, key, now)
	assert.True(t, errors.Is(err, redisstore.ErrNotReplicated), "WAIT on a primary with no replica: got %v, want ErrNotReplicated", err)
}
