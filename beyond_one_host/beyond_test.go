package beyondonehost_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	"github.com/ratelab/ratelab/lab/redisserver"
)

func TestPitfalls(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	got, err := beyondonehost.Pitfalls(context.Background(), c)
	require.NoError(t, err)
	want := map[string]string{
		"INCR, crash, then no EXPIRE":    "no expiry: never resets",
		"count and expiry in one script": "expires",
		"release by plain DEL":           "2 holders (B and C)",
		"release checks the token":       "1 holder (B)",
	}
	require.Len(t, got, len(want))
	for _, p := range got {
		assert.Equal(t, want[p.Case], p.Observed, p.Case)
		assert.True(t, p.Pass(), p.Case)
	}
}

// The failover loses every count the primary acknowledged while the
// replica lagged: the limit is exceeded by as many. WAIT for the replica,
// fail-closed, lets no such hit through, and the limit holds.
func TestFailover(t *testing.T) {
	redisserver.Need(t)
	got, err := beyondonehost.Failover(context.Background())
	require.NoError(t, err)
	require.Len(t, got, 3)
	for _, r := range got {
		l := r.Lesson()
		assert.Equal(t, l.Expected, l.Observed, l.Case)
	}
	assert.Equal(t, beyondonehost.FailoverRun{Mode: beyondonehost.Asynchronous, Before: 30, After: 30}, got[0])
	assert.Equal(t, beyondonehost.FailoverRun{Mode: beyondonehost.WaitForReplica, Before: 0, After: 30}, got[1])
	assert.Equal(t, beyondonehost.FailoverRun{Mode: beyondonehost.MinReplicasToWrite, Before: 0, After: 30}, got[2])

	// The chapter's figure is this run, drawn.
	var buf bytes.Buffer
	require.NoError(t, beyondonehost.WriteFailoverSVG(&buf, got))
	fig, err := os.ReadFile(filepath.Join("..", "docs", "figures", "redis-failover.svg"))
	require.NoError(t, err, "run make figures")
	assert.True(t, bytes.Equal(fig, buf.Bytes()), "docs/figures/redis-failover.svg is stale: run make figures")
}

func TestFailoverModeNames(t *testing.T) {
	for _, tt := range []struct {
		m    beyondonehost.FailoverMode
		want string
	}{
		{beyondonehost.Asynchronous, "replication asynchronous"},
		{beyondonehost.WaitForReplica, "WAIT for 1 replica (fail-closed)"},
		{beyondonehost.MinReplicasToWrite, "min-replicas-to-write 1 (fail-closed)"},
		{beyondonehost.FailoverMode(7), "FailoverMode(7)"},
	} {
		if got := tt.m.String(); got != tt.want {
			t.Errorf("FailoverMode(%d).String() = %q, want %q", int(tt.m), got, tt.want)
		}
	}
}
