//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A process out of file descriptors — a server whose clients hold its
// connections open, slowly, up to its limit — cannot open a state file.
// That is load, not an outage: under fail-open a client that holds
// enough connections would otherwise open the door for every hit the
// server still takes (the attacker's finding: slow bodies, a low
// ulimit -n). The hit is refused as busy, under fail-open and
// fail-closed; fail-local decides it in the process, as it does a lock
// not free in time.
//
// Not parallel: ExhaustDescriptors lowers the process's limit.
func TestOutOfDescriptorsIsLoad(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
		t.Run("fail-"+policy.String(), func(t *testing.T) {
			s, logs := newGuarded(t, policy, fixedfilestore.Options{})
			storetest.ExhaustDescriptors(t)
			d, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
			if policy == ratelab.FailLocal {
				require.NoError(t, err)
				assert.Equal(t, ratelab.Local, d.Source, "fail-local decides in the process")
				assert.ErrorIs(t, d.Cause, syscall.EMFILE)
				return
			}
			require.ErrorIs(t, err, ratelab.ErrBusy, "fail-%v: out of descriptors is load; got %+v", policy, d)
			assert.ErrorIs(t, err, syscall.EMFILE)
			assert.False(t, d.Allowed)
			assert.Contains(t, logs.String(), "the store is busy (load is not an outage)")
		})
	}
}
