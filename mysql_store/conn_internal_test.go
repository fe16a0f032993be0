package mysqlstore

import (
	"database/sql/driver"
	"net"
	"sync"
	"testing"
)

// The driver closes a connection from its own goroutine when the context
// of a call on it ends (its watcher), which can be while Connect is still
// remembering the connection's socket: a ping cut short by its deadline
// did so under the busy suite, and the race detector caught Connect
// writing what Close read. Close and remember must agree whichever comes
// first, and a socket closed first is not kept.
func TestASocketClosedWhileRememberedIsForgotten(t *testing.T) {
	for range 50 {
		a, b := net.Pipe()
		s := &socket{Conn: a}
		c := &connector{sockets: new(sync.Map)}
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.Close()
		}()
		conn := new(fakeConn)
		c.remember(conn, s)
		<-done
		b.Close()
		if _, kept := c.sockets.Load(conn); kept {
			t.Fatal("a closed socket is still in the connector's map")
		}
	}
}

// fakeConn stands for the driver's connection, a key of the map.
type fakeConn struct{ driver.Conn }
