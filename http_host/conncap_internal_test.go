package httphost

import (
	"errors"
	"net"
	"net/http"
	"testing"

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
