//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package storetest

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

// outOfDescriptors checks a database store in a process out of file
// descriptors: it cannot dial the server, and that is load, not an outage
// fail-open lets through (ratelab.ErrBusy). The store it hits is on a
// pool of its own, with no connection open yet.
func outOfDescriptors(t *testing.T, d Database) {
	o := Options{Prefix: "descriptors_", Policy: ratelab.FailOpen, Logger: slog.New(slog.DiscardHandler)}
	require.NoError(t, d.Connect(t, d.DSN, 5*time.Second)(o).CheckServer(context.Background()), "the tables")
	s := d.Connect(t, d.DSN, 5*time.Second)(o)
	ExhaustDescriptors(t)
	dec, err := s.TakeAt(context.Background(), Original, Key, T0)
	require.ErrorIs(t, err, ratelab.ErrBusy, "out of descriptors is load; got %+v", dec)
	assert.ErrorIs(t, err, syscall.EMFILE)
	assert.False(t, dec.Allowed)
}

// ExhaustDescriptors lowers the process's soft limit on open files to a
// few above what it has open and opens files until the next open fails
// with EMFILE: a server whose clients hold its connections open, slowly,
// up to its limit. The test's end closes them and restores the limit.
// The limit is the process's: call it from a test that is not parallel
// (a test that calls t.Parallel waits until the sequential tests have
// run), with its servers started and its clients made.
func ExhaustDescriptors(t *testing.T) {
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
