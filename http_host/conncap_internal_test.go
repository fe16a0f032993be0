package httphost

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestConnsFor(t *testing.T) {
	for _, tt := range []struct {
		cur  uint64
		err  error
		want int
	}{
		{1024, nil, 496},
		{256, nil, 112},
		{64, nil, 16}, // the cap was off here, and below
		{40, nil, 8},
		{10, nil, 8},
		{1 << 20, nil, 1024},
		{0, errors.New("no limit known"), 1024},
	} {
		if got := connsFor(tt.cur, tt.err); got != tt.want {
			t.Errorf("connsFor(%d, %v) = %d, want %d", tt.cur, tt.err, got, tt.want)
		}
	}
}

// A new connection past the cap closes the one idle longest, never one
// that is serving a request.
func TestConnCapClosesTheIdleLongest(t *testing.T) {
	c := &connCap{max: 2, conns: map[net.Conn]connInfo{}}
	busy, idle, fresh := &fakeConn{}, &fakeConn{}, &fakeConn{}
	c.track(busy, http.StateNew)
	c.track(idle, http.StateNew)
	c.track(busy, http.StateActive)
	c.track(idle, http.StateIdle)
	c.track(fresh, http.StateNew)
	assert.True(t, idle.closed, "the idle connection is closed")
	assert.False(t, busy.closed, "the active connection is left alone")
	assert.Len(t, c.conns, 2)
}

// fakeConn is a connection that records its Close.
type fakeConn struct {
	net.Conn
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

// The front opens no more connections to a worker than the worker keeps
// open under the same descriptor limit: past its cap the worker closes
// the connection idle longest, the one the front would send its next
// request on, answered 502 (the attacker's finding at cf8f290: at
// ulimit -n 64, 281 answers of 502 in 20 s; none with the transport
// capped).
func TestTheFrontKeepsToTheWorkersCap(t *testing.T) {
	for _, limit := range []uint64{64, 256, 4096, 1 << 20} {
		worker := connsFor(limit, nil)
		tr := workerTransport(worker, time.Second)
		if tr.MaxConnsPerHost != worker || tr.MaxIdleConnsPerHost > worker {
			t.Errorf("limit %d: the front keeps %d connections to a worker (%d idle), the worker %d", limit, tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost, worker)
		}
	}
}
