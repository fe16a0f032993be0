//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"os"
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
// Not parallel: it lowers the process's descriptor limit, and a test
// that calls t.Parallel waits until the sequential tests have run.
func TestOutOfDescriptorsIsLoad(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
		t.Run("fail-"+policy.String(), func(t *testing.T) {
			s, logs := newGuarded(t, policy, fixedfilestore.Options{})
			exhaustDescriptors(t)
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
			assert.Contains(t, logs.String(), "not taken in time (load is not an outage)")
		})
	}
}

// exhaustDescriptors lowers the process's soft limit on open files to a
// few above what it has open and opens files until the next open fails
// with EMFILE; the test's end closes them and restores the limit.
func exhaustDescriptors(t *testing.T) {
	t.Helper()
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	probe, err := os.Open(os.DevNull)
	require.NoError(t, err)
	low := old
	setLimit(&low.Cur, probe.Fd()+8) // the lowest free descriptor, and a few more
	probe.Close()
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	var held []*os.File
	t.Cleanup(func() {
		for _, f := range held {
			f.Close()
		}
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old)
	})
	for {
		f, err := os.Open(os.DevNull)
		if err != nil {
			require.ErrorIs(t, err, syscall.EMFILE)
			return
		}
		held = append(held, f)
		require.Less(t, len(held), 64, "the limit of %d descriptors was never reached", low.Cur)
	}
}

// setLimit sets a limit of Rlimit to n: uint64 on Linux and macOS, int64
// on the BSDs.
func setLimit[T ~int64 | ~uint64](limit *T, n uintptr) { *limit = T(n) }
