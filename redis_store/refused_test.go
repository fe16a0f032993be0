package redisstore_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/lab/redisserver"
	"github.com/ratelab/ratelab/internal/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// The finding: under CGI, which checks nothing at start, a wrong Redis
// password let 40 of 40 through at a limit of 3 — each hit "not counted
// (fail-open)". Refused settings are a configuration error under every
// policy: the hit is not let through.
func TestRefusedSettingsAreNeverAnOutage(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	require.NoError(t, c.ConfigSet(context.Background(), "requirepass", "sesame").Err())
	for _, url := range []string{"redis://:wrong@" + srv.Addr + "/0", "redis://:sesame@" + srv.Addr + "/99"} {
		for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
			rc, err := redisstore.NewClient(url, 0)
			require.NoError(t, err)
			s, err := redisstore.New(rc, redisstore.Options{FailPolicy: policy, Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
			assert.ErrorIs(t, err, redisstore.ErrRefused, "%s, fail-%v", url, policy)
			assert.False(t, d.Allowed, "%s, fail-%v", url, policy)
			rc.Close()
		}
	}
}
