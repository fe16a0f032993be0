package harness_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/poll"
)

// A worker that hangs (SIGSTOP) holds none of the pool's clients longer
// than the front's Worker timeout: they are answered 502, and the other
// worker goes on answering.
func TestFrontGivesUpOnAHungWorker(t *testing.T) {
	to := harness.DefaultTimeouts()
	to.Worker = 300 * time.Millisecond
	h, err := harness.Start(harness.Config{Model: harness.Pool, Workers: 2, App: app(t, "memory"), Timeouts: to, Stderr: new(strings.Builder)})
	require.NoError(t, err)
	p, err := os.FindProcess(h.Pids()[0])
	require.NoError(t, err)
	require.NoError(t, p.Signal(syscall.SIGSTOP))
	t.Cleanup(func() { p.Signal(syscall.SIGCONT); h.Close() })
	// kill returns before the stop takes effect: wait until it has.
	require.NoError(t, poll.Until(10*time.Second, time.Millisecond, func() error {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid))
		if f := strings.Fields(string(st)); err == nil && len(f) > 2 && f[2] != "T" {
			err = fmt.Errorf("worker %d is in state %s", p.Pid, f[2])
		}
		return err
	}))
	codes := map[int]int{}
	start := time.Now()
	for range 4 {
		resp, err := http.Post(h.URL, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	assert.Equal(t, map[int]int{200: 2, 502: 2}, codes, "round robin: two to the hung worker, answered by the front")
	assert.Less(t, time.Since(start), 8*time.Second, "each request to the hung worker ends near the 300 ms bound, not never")
}
