package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A hit's deadline is kept at the socket. The driver keeps a context's
// deadline with a goroutine of each connection's, woken at the start and
// at the end of every statement: two hand-overs between goroutines per
// statement, which cost a hit tens of microseconds on a busy two-core
// machine, a third of a fixed-window hit. A connection of OpenDB instead
// remembers its socket, and a hit registers with context.AfterFunc, which
// starts no goroutine unless the hit's time runs out, what sets the
// socket's deadline to the past; the driver runs the statements without
// watching.

// connector dials sockets a hit can cut short, and runs one statement on
// each new connection, carrying on where the server does not know it
// (MySQL answers 1193, unknown system variable, to max_statement_time).
type connector struct {
	driver.Connector
	stmt    string
	sockets *sync.Map // driver.Conn → *socket, while it is open
}

// newConnector is a connector for cfg, whose DialFunc it sets when cfg
// dials by TCP or a Unix socket and has none.
func newConnector(cfg *mysql.Config, stmt string) (*connector, error) {
	c := &connector{stmt: stmt}
	switch cfg.Net {
	case "tcp", "tcp4", "tcp6", "unix":
		if cfg.DialFunc == nil {
			c.sockets = new(sync.Map)
			cfg.DialFunc = dial
		}
	}
	var err error
	c.Connector, err = mysql.NewConnector(cfg)
	return c, err
}

// socketOf is the context key under which Connect hands dial the place
// for the socket it makes.
type socketOf struct{}

func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := new(net.Dialer).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s := &socket{Conn: nc}
	if slot, ok := ctx.Value(socketOf{}).(**socket); ok {
		*slot = s
	}
	return s, nil
}

// Connect connects, remembers the connection's socket and runs c.stmt.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	var s *socket
	conn, err := c.Connector.Connect(context.WithValue(ctx, socketOf{}, &s))
	if err != nil && s != nil && s.timedOut.Load() {
		// The driver says "invalid connection" for a handshake it read
		// past its deadline: say it timed out, which the store takes for
		// load even when database/sql hands the failed attempt of its
		// opener to a hit whose own time is left.
		return nil, fmt.Errorf("%w: %w", os.ErrDeadlineExceeded, err)
	}
	if err != nil {
		return nil, err
	}
	if ex, ok := conn.(driver.ExecerContext); ok {
		var me *mysql.MySQLError
		if _, err := ex.ExecContext(ctx, c.stmt, nil); err != nil && !(errors.As(err, &me) && me.Number == 1193) {
			conn.Close()
			return nil, err
		}
	}
	if s != nil && c.sockets != nil {
		c.remember(conn, s)
	}
	return conn, nil
}

// remember keeps s as conn's socket until it closes. The driver may close
// it from another goroutine meanwhile (its watcher, when a call's context
// ends): a socket closed first is not kept.
func (c *connector) remember(conn driver.Conn, s *socket) {
	c.sockets.Store(conn, s)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.sockets.Delete(conn)
		return
	}
	s.forget = func() { c.sockets.Delete(conn) }
}

// Driver is the driver's, with the sockets: New finds them there.
func (c *connector) Driver() driver.Driver { return sockets{c.Connector.Driver(), c.sockets} }

// sockets is a connector's driver and its connections' sockets.
type sockets struct {
	driver.Driver
	m *sync.Map
}

// socket is a connection's socket, which a hit can cut short: once
// aborted, every deadline the driver sets is in the past.
type socket struct {
	net.Conn
	aborted  atomic.Bool
	timedOut atomic.Bool // a read ran past its deadline
	mu       sync.Mutex  // guards closed and forget: the driver may close from its watcher
	closed   bool
	forget   func() // removes the socket from its connector's map
	// stmts are the statements prepared on the connection, by query: used
	// only by the hit that holds the connection.
	stmts map[string]driver.StmtExecContext
}

var past = time.Unix(1, 0)

func (s *socket) abort() {
	s.aborted.Store(true)
	s.Conn.SetDeadline(past)
}

// kept sets a deadline with set, or the past if the socket is aborted —
// checked after, so that an abort between the check and set still holds.
func (s *socket) kept(set func(time.Time) error, t time.Time) error {
	err := set(t)
	if s.aborted.Load() {
		return set(past)
	}
	return err
}

// Read reads, and remembers a read that ran past its deadline.
func (s *socket) Read(b []byte) (int, error) {
	n, err := s.Conn.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.timedOut.Store(true)
	}
	return n, err
}

func (s *socket) SetDeadline(t time.Time) error      { return s.kept(s.Conn.SetDeadline, t) }
func (s *socket) SetReadDeadline(t time.Time) error  { return s.kept(s.Conn.SetReadDeadline, t) }
func (s *socket) SetWriteDeadline(t time.Time) error { return s.kept(s.Conn.SetWriteDeadline, t) }

// SyscallConn lets the driver check a pooled connection is alive.
func (s *socket) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := s.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

func (s *socket) Close() error {
	s.mu.Lock()
	s.closed = true
	forget := s.forget
	s.mu.Unlock()
	if forget != nil {
		forget()
	}
	return s.Conn.Close()
}

// socketOf returns conn's socket, or nil if it is unknown (a database
// OpenDB did not make).
func (s *Store) socketOf(conn *sql.Conn) (sock *socket) {
	if s.sockets != nil {
		conn.Raw(func(dc any) error {
			if v, ok := s.sockets.Load(dc); ok {
				sock = v.(*socket)
			}
			return nil
		})
	}
	return sock
}

// bound returns the context for the statements of a hit on conn, which
// does not end: ctx's end is kept at the socket instead. end, called with
// the statements' error, reports whether ctx ended during them: the
// connection is then closed, not pooled, and the error wraps ctx's. On a
// connection whose socket is unknown (a database OpenDB did not make) it
// returns ctx, for the driver to keep. sock is conn's (see socketOf).
func (s *Store) bound(ctx context.Context, conn *sql.Conn, sock *socket) (stmts context.Context, end func(error) error) {
	if sock == nil {
		return ctx, func(err error) error { return err }
	}
	stop := context.AfterFunc(ctx, sock.abort)
	return context.WithoutCancel(ctx), func(err error) error {
		if stop() {
			return err
		}
		conn.Raw(func(any) error { return driver.ErrBadConn })
		if err != nil {
			err = fmt.Errorf("%w: %w", ctx.Err(), err)
		}
		return err
	}
}

// execPrepared runs q with args on conn, whose socket is sock, as a
// statement the server prepared on the connection at its first use: the
// server then parses it once per connection, not at every hit, which
// costs a hit more than evaluating it does. Where the socket is unknown
// or the server refuses to prepare q, q goes as text.
func execPrepared(ctx context.Context, conn *sql.Conn, sock *socket, q string, args ...any) (sql.Result, error) {
	text := sock == nil
	if !text {
		var res sql.Result
		err := conn.Raw(func(dc any) error {
			st, err := sock.prepared(ctx, dc, q)
			if st == nil {
				text = err == nil
				return err
			}
			named := make([]driver.NamedValue, len(args))
			for i, a := range args {
				named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
			}
			res, err = st.ExecContext(ctx, named)
			return err
		})
		if !text {
			return res, err
		}
	}
	return conn.ExecContext(ctx, q, args...)
}

// prepared returns q prepared on dc, the socket's connection, preparing it
// at its first use; nil and no error if the server refused to prepare it,
// which is not asked again on the connection.
func (s *socket) prepared(ctx context.Context, dc any, q string) (driver.StmtExecContext, error) {
	if st, ok := s.stmts[q]; ok {
		return st, nil
	}
	var ex driver.StmtExecContext
	if p, ok := dc.(driver.ConnPrepareContext); ok {
		st, err := p.PrepareContext(ctx, q)
		var me *mysql.MySQLError
		if err != nil && !errors.As(err, &me) {
			return nil, err
		}
		if ex, ok = st.(driver.StmtExecContext); st != nil && !ok {
			st.Close()
		}
	}
	if s.stmts == nil {
		s.stmts = map[string]driver.StmtExecContext{}
	}
	s.stmts[q] = ex
	return ex, nil
}
