package httphost_test

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
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// A worker that hangs (SIGSTOP) holds none of the pool's clients longer
// than the front's Worker timeout: the request it left unanswered is
// answered 502 by the front, which kills the worker, as PHP-FPM's
// request_terminate_timeout does; another worker takes its seat, and
// every request after is answered. The request answered 502 is not
// counted: the front closes what waited in the seat's backlog before the
// next worker could take it (the attacker's finding: it was counted).
func TestFrontKillsAHungWorker(t *testing.T) {
	to := httphost.DefaultTimeouts()
	to.Worker = 300 * time.Millisecond
	var log syncbuf.Buffer
	h, err := httphost.Start(httphost.Config{Model: harness.Pool, Workers: 2, App: app(t, harness.File), Timeouts: to, Stderr: &log})
	require.NoError(t, err)
	hung := h.Pids()[0]
	p, err := os.FindProcess(hung)
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
	start := time.Now()
	resp, err := http.Post(h.URL, "", nil) // the first request goes to the first seat
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode, "the hung worker's request, answered by the front")
	assert.Less(t, time.Since(start), 8*time.Second, "ended near the 300 ms bound, not never")
	require.NoError(t, poll.Until(20*time.Second, 5*time.Millisecond, func() error {
		if h.Pids()[0] == hung {
			return fmt.Errorf("the hung worker %d still holds its seat", hung)
		}
		return nil
	}))
	assert.Contains(t, log.String(), fmt.Sprintf("worker pid %d gave no answer within 300ms: killed", hung))
	codes := map[int]int{}
	for range 4 {
		resp, err := http.Post(h.URL, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	assert.Equal(t, map[int]int{200: 4}, codes, "both seats answer again")
	for range 40 {
		resp, err := http.Post(h.URL, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
			break
		}
		codes[resp.StatusCode]++
	}
	assert.Equal(t, 30, codes[http.StatusOK], "the limit's 30 hits allowed: the one answered 502 was not counted")
}
