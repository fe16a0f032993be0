//go:build unix

package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// A Redis that froze (SIGSTOP: a paused host, a machine swapping) runs
// the scripts of the hits that timed out while it slept, once it wakes:
// the kernel had taken them into its sockets. Each of those hits was told
// it failed — fail-closed, a 503 — and each is counted all the same, so
// the client has that many fewer left in its window: four hits in flight
// at the freeze, one from each of four workers, and 26 of 30 left after
// it. (A hit that had to open a connection first never sent its script:
// the connection's greeting timed out.)
func TestAFrozenRedisCountsTheHitsItNeverAnswered(t *testing.T) {
	const workers = 4
	rule := storetest.Checked(ratelab.Rule{Name: "freeze", Limit: 30, Window: time.Hour})
	srv := redisserver.ForTest(t)
	ctx, now := context.Background(), time.Now()
	admin := srv.Client()
	defer admin.Close()
	var stores []*redisstore.Store
	for range workers { // each with a connection open and the script loaded, as after a worker's first hit
		s := faultStore(t, srv.URL(), 300*time.Millisecond, slog.New(slog.DiscardHandler))
		_, err := s.TakeAt(ctx, rule, "ip:198.51.100.1", now)
		require.NoError(t, err)
		stores = append(stores, s)
	}
	before, err := evalshaCalls(admin.Info(ctx, "commandstats").Val())
	require.NoError(t, err)

	resume, err := srv.Pause()
	require.NoError(t, err)
	t.Cleanup(func() { resume() })
	for i, s := range stores {
		_, err := s.TakeAt(ctx, rule, faultKey, now)
		require.ErrorIs(t, err, ratelab.ErrUnavailable, "worker %d's hit, sent to a frozen Redis", i+1)
	}
	require.NoError(t, resume())
	require.NoError(t, poll.Until(10*time.Second, 10*time.Millisecond, func() error {
		calls, err := evalshaCalls(admin.Info(ctx, "commandstats").Val())
		if err == nil && calls < before+workers {
			err = fmt.Errorf("Redis has run %d of the %d scripts sent while it was frozen", calls-before, workers)
		}
		return err
	}))
	allowed := 0
	for {
		d, err := stores[0].TakeAt(ctx, rule, faultKey, now)
		require.NoError(t, err)
		if !d.Allowed {
			break
		}
		allowed++
	}
	require.Equal(t, rule.Limit-workers, int64(allowed), "hits allowed after the thaw, of a limit of %d", rule.Limit)
}

// evalshaCalls reads the number of EVALSHA calls from INFO commandstats.
func evalshaCalls(info string) (int, error) {
	var calls int
	for line := range strings.Lines(info) {
		if _, err := fmt.Sscanf(line, "cmdstat_evalsha:calls=%d,", &calls); err == nil {
			return calls, nil
		}
	}
	return 0, errors.New("INFO commandstats names no EVALSHA yet")
}
