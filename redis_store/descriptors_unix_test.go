//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package redisstore_test

import (
	"context"
	"log/slog"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A process out of file descriptors cannot dial Redis: load, as it is for
// the file store, not an outage that fail-open lets through — clients
// that hold the server's connections open would otherwise open the door
// (fixed_filestore's TestOutOfDescriptorsIsLoad). The client is new, so
// the hit dials.
//
// Not parallel: ExhaustDescriptors lowers the process's limit.
func TestOutOfDescriptorsIsLoad(t *testing.T) {
	srv := redisserver.ForTest(t)
	raw, _ := storeAt(t, srv.URL())
	s := storetest.WithPolicy(raw, ratelab.FailOpen, slog.New(slog.DiscardHandler))
	storetest.ExhaustDescriptors(t)
	d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
	require.ErrorIs(t, err, ratelab.ErrBusy, "out of descriptors is load; got %+v", d)
	assert.ErrorIs(t, err, syscall.EMFILE)
	assert.False(t, d.Allowed)
}
