package storetest

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
)

// Outage checks a store whose server cannot be reached: newStore makes one
// behind a policy (WithPolicy) and a logger. Fail-open lets the hit
// through uncounted, fail-closed returns ErrUnavailable, fail-local
// decides in this process alone — the 31st hit of the original's rule
// refused, another key apart; each logs a line whose error names pkg.
func Outage(t *testing.T, pkg string, newStore func(ratelab.FailPolicy, *slog.Logger) ratelab.Store) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
		var logs bytes.Buffer
		s := newStore(policy, slog.New(slog.NewTextHandler(&logs, nil)))
		d, err := s.TakeAt(context.Background(), Original, Key, T0)
		switch policy {
		case ratelab.FailOpen:
			require.NoError(t, err)
			assert.True(t, d.Allowed)
			assert.Equal(t, ratelab.Uncounted, d.Source)
			assert.Error(t, d.Cause)
		case ratelab.FailClosed:
			assert.ErrorIs(t, err, ratelab.ErrUnavailable)
		case ratelab.FailLocal:
			require.NoError(t, err)
			var allowed []bool
			for range Original.Limit {
				d, err = s.TakeAt(context.Background(), Original, Key, T0)
				require.NoError(t, err)
				assert.Equal(t, ratelab.Local, d.Source, "decided in this process, not in the shared store")
				assert.Error(t, d.Cause)
				allowed = append(allowed, d.Allowed)
			}
			assert.Equal(t, []bool{true, false}, []bool{allowed[Original.Limit-2], allowed[Original.Limit-1]}, "the 30th allowed, the 31st refused")
			d, err = s.TakeAt(context.Background(), Original, "another", T0)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "another key, another count")
		}
		assert.Contains(t, logs.String(), pkg)
	}
}
