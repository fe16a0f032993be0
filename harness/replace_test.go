package harness_test

import (
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/poll"
)

// The attacker's finding: a pool worker killed with SIGKILL was never
// replaced. The front went on sending it every other request (502s), to a
// port any local process could then listen on and be sent the front's
// token — one token for every worker, with which it could send hits to
// the live workers as any client it liked. Now the front starts a worker
// in the dead one's place, sends nothing more to the dead one's port,
// and each worker has a token of its own: the dead one's opens no other.
func TestADeadWorkerIsReplacedAndItsTokenOpensNothing(t *testing.T) {
	h, err := harness.Start(harness.Config{Model: harness.Pool, Workers: 2, App: app(t, "file"), Stderr: io.Discard})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})
	before := h.Workers()
	require.NotEqual(t, before[0].Token, before[1].Token, "a token per worker")
	p, err := os.FindProcess(before[0].Pid)
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	require.NoError(t, poll.Until(20*time.Second, 5*time.Millisecond, func() error {
		if h.Workers()[0].Pid == before[0].Pid {
			return assert.AnError
		}
		return nil
	}), "a worker takes the dead one's place")
	after := h.Workers()
	assert.NotEqual(t, before[0].Token, after[0].Token, "the new worker's token is new")

	// Whoever listens on the dead worker's port now gets nothing.
	squatter, err := net.Listen("tcp", before[0].Addr)
	if err == nil {
		defer squatter.Close()
	}
	codes := map[int]int{}
	for range 6 {
		codes[post(t, http.DefaultClient, h.URL)]++
	}
	assert.Equal(t, map[int]int{200: 6}, codes, "every request answered by a live worker")
	if squatter != nil {
		squatter.(*net.TCPListener).SetDeadline(time.Now())
		_, err := squatter.Accept()
		assert.Error(t, err, "the front connected to the dead worker's port")
	}

	// The dead worker's token does not vouch at a live one: the hit is
	// keyed on the address it came from, as any client's.
	for range 30 { // the limit of app's rule
		post(t, http.DefaultClient, h.URL)
	}
	live := "http://" + after[1].Addr + "/demo"
	assert.Equal(t, http.StatusTooManyRequests, post(t, clientFrom("127.0.0.1"), live,
		harness.HeaderFrontToken, before[0].Token, harness.HeaderClient, "198.51.100.1"), "a stale token names no client")

	closed = true
	err = h.Close()
	require.Error(t, err, "a death mid-run is reported when the host stops")
	assert.Contains(t, err.Error(), "died")
}
