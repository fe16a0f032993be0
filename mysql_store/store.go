package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/hostport"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/sql_store"
)

// Store is a MariaDB- or MySQL-backed rate-limit store for every
// algorithm, safe for concurrent use by any number of goroutines,
// processes and hosts sharing one database. Create its tables once with
// CreateTables.
type Store struct {
	db      *sql.DB
	sockets *sync.Map // of OpenDB's connections: see bound
	base    *sqlstore.Base
	q       queries
	server  server
}

// New returns a Store on db, which OpenDB makes. New does not contact the
// server: a database that is down is a failure of the first hits
// (ratelab.ErrUnavailable). Which server it is — MariaDB 10.5 or later takes a
// locked hit in two round trips, MySQL in five — is learnt from the
// query CheckServer runs anyway, or else once, at the first locked hit.
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysqlstore: New needs a database")
	}
	s := &Store{db: db}
	if d, ok := db.Driver().(sockets); ok {
		s.sockets = d.m
	}
	base, err := sqlstore.NewBase("mysqlstore", sqlstore.Options(opts), sqlstore.Driver{
		Overloaded: overloaded, OutOfTime: outOfTime, Refused: refused, ErrRefused: ErrRefused, Tables: tables, Exec: s.exec})
	if err != nil {
		return nil, err
	}
	s.base, s.q = base, newQueries(base.Prefix)
	return s, nil
}

// exec runs q with args on a connection of the pool and returns how many
// rows it affected.
func (s *Store) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// DefaultTimeout bounds one hit, lock wait included, by default.
const DefaultTimeout = sqlstore.DefaultTimeout

// Options configure a Store. The zero value fails open with a 2 s
// timeout and tables named ratelab_fixed and ratelab_state.
type Options struct {
	// Timeout bounds each hit, lock wait included; 0 means DefaultTimeout.
	// Give OpenDB the same timeout: the server's own bound, which keeps a
	// hit its client gave up on from being counted later, is set there,
	// on every connection.
	Timeout time.Duration
	Logger  *slog.Logger // nil means slog.Default()
	// Prefix is put before the tables' names: lower-case letters, digits
	// and underscores, at most 32; "" means "ratelab_".
	Prefix string
	// Clock is the time source of Take; nil means time.Now.
	Clock func() time.Time
}

// OpenDB opens a database for a Store from a go-sql-driver/mysql DSN,
// user:password@tcp(host:port)/dbname, and does not connect: parameters
// interpolated by the client (one round trip per statement), connect,
// read and write timeouts of timeout (0: DefaultTimeout), an InnoDB lock
// wait as long as the timeout (whole seconds, the server's unit), and at
// most maxConns connections open at once (0: DefaultMaxConns), kept idle
// for the hits to come; a hit waits its turn for one. Size maxConns so that the processes sharing the
// server, together, stay below what Connections reports: a server that
// turns connections away is waited out, but only within the timeout.
//
// On MariaDB every connection also sets max_statement_time to four fifths
// of timeout, so that the server abandons a statement waiting for a row
// lock before the client does. MySQL has no max_statement_time (the SET
// is skipped there), and its max_execution_time bounds read-only SELECTs
// only; its one bound on a row-lock wait is innodb_lock_wait_timeout,
// above, which ends no sooner than the client gives up. The statements'
// deadline check, made once the row is locked, covers that wait but in
// one place: the fixed window's upsert, a window's first hit, checks
// before it waits for the row, so on MySQL it counts a hit whose row
// another transaction held past the deadline and released within the lock
// wait (see the package doc and the database-lock chapter).
func OpenDB(dsn string, timeout time.Duration, maxConns int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", redact.Err(err, dsn))
	}
	if maxConns < 0 {
		return nil, fmt.Errorf("mysqlstore: maxConns %d must not be negative", maxConns)
	}
	if cfg.Net == "tcp" {
		if err := hostport.Check(cfg.Addr); err != nil {
			return nil, fmt.Errorf("mysqlstore: %w", err)
		}
	}
	timeout = cmp.Or(max(timeout, 0), DefaultTimeout)
	cfg.InterpolateParams = true
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = timeout, timeout, timeout
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// InnoDB's lock wait, in whole seconds, must not end a hit before its
	// timeout does (a row held a moment too long is load, not an outage):
	// max_statement_time, below, ends it first.
	cfg.Params["innodb_lock_wait_timeout"] = strconv.Itoa(max(1, int(math.Ceil(timeout.Seconds()))))
	c, err := newConnector(cfg, fmt.Sprintf("SET SESSION max_statement_time = %.3f", sqlstore.ServerTimeout(timeout).Seconds()))
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", redact.Err(err, dsn))
	}
	db := sql.OpenDB(c)
	n := cmp.Or(maxConns, DefaultMaxConns)
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxIdleTime(time.Minute)
	return db, nil
}

// DefaultMaxConns is how many connections a database of OpenDB opens at
// most by default.
const DefaultMaxConns = sqlstore.DefaultMaxConns

// outOfTime reports whether err is the server ending a statement that ran
// out of time (MariaDB's 1969, MySQL's 3024) or a lock wait (1205).
func outOfTime(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1969 || me.Number == 3024 || me.Number == 1205)
}

// overloaded reports whether err is the server turning a connection away
// for want of a free slot (1040, too many connections; 1203, too many of
// this user's): the server is busy, not gone.
func overloaded(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1040 || me.Number == 1203)
}

// refused reports whether err is the server refusing the connection's
// settings: access denied (1044, 1045, 1698), a database that does not
// exist (1049), a command denied (1142), or TLS that the DSN requires and
// the server does not offer (mysql.ErrNoTLS).
func refused(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return slices.Contains([]uint16{1044, 1045, 1049, 1142, 1698}, me.Number)
	}
	return errors.Is(err, mysql.ErrNoTLS)
}

// Key returns the primary key of the state of key under r: the algorithm
// and the digest of the rule's state key, as in
// "fixed:<hex sha256("demo-start:ip:203.0.113.7")>".
func (s *Store) Key(r ratelab.Rule, key string) string { return sqlstore.Key(r.Normalized(), key) }

// Take takes one hit now; it is TakeAt(ctx, r, key, clock()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	return s.TakeAt(ctx, r, key, s.base.Now())
}

// TakeAt takes one hit of key under r at now and decides it; r and now
// are trusted, as the ratelab.Store contract says. The hit ends at
// Options.Timeout or when ctx ends, whichever is first. When the database
// cannot be reached — the connection refused or reset, the host
// unreachable — the error wraps ratelab.ErrUnavailable, which
// ratelab.WithFailPolicy decides by a policy. A hit the database did not
// take in time, busy or hung (a client cannot tell which), wraps
// ratelab.ErrBusy, which the policy refuses under fail-open as under
// fail-closed. A state of another rule with the same name wraps
// ratelab.ErrRuleConflict, the state left as it was.
func (s *Store) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return s.base.TakeAt(ctx, r, key, now, s.takeFixed, s.takeLocked)
}

// countBits is how many low bits of the fixed statement's packed result
// hold the count; bit 63 says the row was replaced.
const countBits = 28

// takeFixed is the fixed window's hit: hotSQL, and fixedSQL when hotSQL
// matched no row. fixedSQL's packed result is 0 when it set none: it
// inserted the row (one row affected) or the deadline had passed (none).
func (s *Store) takeFixed(ctx context.Context, h sqlstore.Hit) (ratelab.Decision, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return ratelab.Decision{}, err
	}
	defer conn.Close()
	b, sock := h.Fixed(), s.socketOf(conn)
	stmts, end := s.bound(ctx, conn, sock)
	packed, inserted, err := s.fixed(stmts, conn, sock, h, b)
	if err = end(err); err != nil {
		return ratelab.Decision{}, err
	}
	switch {
	case packed == 0 && !inserted:
		return ratelab.Decision{}, sqlstore.ErrLate
	case packed == 0:
		return h.FixedDecision(1, b.Fresh) // a new row
	case packed < 0:
		s.base.Log.Warn("mysqlstore: replaced a corrupt state", "key", h.Key)
		packed &= math.MaxInt64
	}
	return h.FixedDecision(packed&(1<<countBits-1), packed>>countBits)
}

// fixed runs the fixed window's statements on conn, whose socket is
// sock (hotSQL prepared, see execPrepared), and returns the packed
// result, and whether fixedSQL inserted the row when that is 0.
func (s *Store) fixed(ctx context.Context, conn *sql.Conn, sock *socket, h sqlstore.Hit, b algorithm.FixedBounds) (packed int64, inserted bool, err error) {
	res, err := execPrepared(ctx, conn, sock, s.q.hot, hotArgs(h, b)...)
	if err == nil {
		packed, err = res.LastInsertId()
	}
	if err != nil || packed != 0 {
		return packed, false, err
	}
	if res, err = conn.ExecContext(ctx, s.q.fixed, fixedArgs(h, b)...); err != nil {
		return 0, false, err
	}
	if packed, err = res.LastInsertId(); err != nil || packed != 0 {
		return packed, false, err
	}
	n, err := res.RowsAffected()
	return 0, n > 0, err
}

// Reset forgets the state of key under r: one DELETE, atomic against any
// hit that runs before or after it.
func (s *Store) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	return s.base.Reset(ctx, r, key)
}

// Clear deletes every state, of every key and rule, from the store's
// tables, and leaves the tables: what a demonstration does between runs
// that must each start afresh. A live limiter has no use for it.
func (s *Store) Clear(ctx context.Context) error { return s.base.Clear(ctx) }
