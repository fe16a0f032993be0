package httphost_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// The attacker's finding: a pool worker killed with SIGKILL was never
// replaced. The front went on sending it every other request (502s), to a
// port any local process could then listen on and be sent the front's
// token — one token for every worker, with which it could send hits to
// the live workers as any client it liked. Now each worker serves a
// socket the front made and keeps (its seat), with a token of its own: a
// dead worker's port never comes free, another worker takes its seat,
// and the seat's token vouches at no other.
func TestADeadWorkersSeatIsRefilledAndNobodyCanTakeIt(t *testing.T) {
	var log syncbuf.Buffer
	h, err := httphost.Start(httphost.Config{Model: harness.Pool, Workers: 2, App: app(t, harness.File), Stderr: &log})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			h.Close()
		}
	})
	before := h.Workers()
	require.NotEqual(t, before[0].Token, before[1].Token, "a token per seat")
	p, err := os.FindProcess(before[0].Pid)
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	// Nobody can take the dead worker's port: the front holds it.
	_, err = net.Listen("tcp", before[0].Addr)
	require.Error(t, err, "listening on the dead worker's port")
	require.True(t, errors.Is(err, syscall.EADDRINUSE), "%v", err)

	codes := map[int]int{}
	for range 6 {
		codes[post(t, http.DefaultClient, h.URL)]++
	}
	assert.Equal(t, map[int]int{200: 6}, codes, "every request answered, those sent to the seat meanwhile by the worker that took it")
	require.NoError(t, poll.Until(20*time.Second, 5*time.Millisecond, func() error {
		if h.Workers()[0].Pid == before[0].Pid {
			return errors.New("the seat's worker is the dead one")
		}
		return nil
	}))
	after := h.Workers()
	assert.Equal(t, before[0].Addr, after[0].Addr, "the same seat: the same socket")

	// One seat's token does not vouch at another: the hit is keyed on the
	// address it came from, as any client's.
	for range 30 { // the limit of app's rule
		post(t, http.DefaultClient, h.URL)
	}
	other := "http://" + after[1].Addr + "/demo"
	assert.Equal(t, http.StatusTooManyRequests, post(t, clientFrom("127.0.0.1"), other,
		httphost.HeaderFrontToken, before[0].Token, httphost.HeaderClient, "198.51.100.1"), "another seat's token names no client")

	closed = true
	err = h.Close()
	require.Error(t, err, "a death mid-run is reported when the host stops")
	assert.Contains(t, err.Error(), "took its seat")
	assert.Contains(t, log.String(), "took its seat", "and logged when it happened")
}

// Under the single model, requests sent after the one worker's death get
// no error: they wait in the seat's backlog for the next worker. (Those
// the worker had in hand when it died are answered 502, and not
// counted.)
func TestRequestsSentAfterADeathWaitForTheNextWorker(t *testing.T) {
	h, err := httphost.Start(httphost.Config{Model: harness.Single, App: app(t, harness.File), Stderr: io.Discard})
	require.NoError(t, err)
	p, err := os.FindProcess(h.Pids()[0])
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	codes := map[int]int{}
	for range 5 {
		codes[post(t, http.DefaultClient, h.URL)]++
	}
	assert.Equal(t, map[int]int{200: 5}, codes)
	assert.Error(t, h.Close(), "the death reported")
}

// A worker that keeps dying is not started again and again: past two
// deaths per seat, plus two, within a minute, the seat of the next one to
// die stays empty, the front answers 503 when no seat has a worker, and
// says so when it happens.
func TestASeatStaysEmptyPastTheDeathCap(t *testing.T) {
	var log syncbuf.Buffer
	h, err := httphost.Start(httphost.Config{Model: harness.Single, App: app(t, harness.Memory), Stderr: &log})
	require.NoError(t, err)
	const most = 2*1 + 2 // one seat
	for death := 1; death <= most+1; death++ {
		pid := h.Pids()[0]
		p, err := os.FindProcess(pid)
		require.NoError(t, err)
		require.NoError(t, p.Kill())
		require.NoError(t, poll.Until(20*time.Second, 5*time.Millisecond, func() error {
			if death <= most && h.Pids()[0] == pid {
				return errors.New("no worker took the seat yet")
			}
			if death > most && !strings.Contains(log.String(), "its seat stays empty") {
				return errors.New("the front has not given up on the seat yet")
			}
			return nil
		}), "death %d", death)
	}
	assert.Equal(t, http.StatusServiceUnavailable, post(t, http.DefaultClient, h.URL), "no seat has a worker")
	assert.Contains(t, log.String(), fmt.Sprintf("%d deaths within 1m0s: its seat stays empty until the server restarts", most+1))
	err = h.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "its seat stays empty")
}

// The attacker's fifth finding: a worker that could not take a dead one's
// seat (its state directory now a symlink, so it exits before it is
// ready) left the front blocked for good in the seat's drain, deaf to
// Ctrl-C. Handing the seat's socket to a worker made it blocking (exec
// passes a descriptor in blocking mode, and the mode is the socket's, the
// front's copy's too); only a worker that got as far as listening made it
// non-blocking again. The front says the seat stays empty, and stops.
func TestASeatNobodyCanTakeIsReportedAndTheFrontStops(t *testing.T) {
	var log syncbuf.Buffer
	a := app(t, harness.File)
	h, err := httphost.Start(httphost.Config{Model: harness.Pool, Workers: 2, App: a, Stderr: &log})
	require.NoError(t, err)
	dir := filepath.Join(a.Dir, fixedfilestore.DirName)
	require.NoError(t, os.Rename(dir, dir+".old"))
	require.NoError(t, os.Symlink(dir+".old", dir))
	p, err := os.FindProcess(h.Pids()[0])
	require.NoError(t, err)
	require.NoError(t, p.Kill())
	require.NoError(t, poll.Until(20*time.Second, 5*time.Millisecond, func() error {
		if !strings.Contains(log.String(), "none could take its seat") {
			return errors.New("the front has not said the seat stays empty")
		}
		return nil
	}))
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	select {
	case err := <-closed:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "none could take its seat")
	case <-time.After(30 * time.Second):
		t.Fatal("the front did not stop")
	}
}
