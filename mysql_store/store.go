package mysqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/hostport"
	"github.com/ratelab/ratelab/internal/redact"
	"github.com/ratelab/ratelab/internal/sqlstore"
)

// DefaultTimeout bounds one hit, lock wait included, by default.
const DefaultTimeout = sqlstore.DefaultTimeout

// Options configure a Store. The zero value fails open with a 2 s
// timeout and tables named ratelab_fixed and ratelab_state.
type Options struct {
	FailPolicy ratelab.FailPolicy
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

// Store is a MariaDB- or MySQL-backed rate-limit store for every
// algorithm, safe for concurrent use by any number of goroutines,
// processes and hosts sharing one database. Create its tables once with
// CreateTables.
type Store struct {
	db   *sql.DB
	base sqlstore.Base
	q    queries
}

// New returns a Store on db, which OpenDB makes. New does not contact the
// server: a database that is down is a failure of the first hits, handled
// by the fail policy.
func New(db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("mysqlstore: New needs a database")
	}
	s := &Store{db: db, base: sqlstore.Base{Pkg: "mysqlstore", Policy: opts.FailPolicy, Timeout: opts.Timeout,
		Log: opts.Logger, Now: opts.Clock, Prefix: opts.Prefix, Overloaded: overloaded, OutOfTime: outOfTime}}
	if err := s.base.Check(); err != nil {
		return nil, err
	}
	s.q = newQueries(s.base.Prefix)
	return s, nil
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
// lock before the client does. MySQL has no such setting for writes; the
// statements' own deadline check covers most of it (see the package doc).
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
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysqlstore: %w", redact.Err(err, dsn))
	}
	db := sql.OpenDB(setup{c, fmt.Sprintf("SET SESSION max_statement_time = %.3f", sqlstore.ServerTimeout(timeout).Seconds())})
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

// Key returns the primary key of the state of key under r: the algorithm
// and the digest of the rule's state key, as in
// "fixed:<hex sha256("demo-start:ip:203.0.113.7")>".
func (s *Store) Key(r ratelab.Rule, key string) string { return sqlstore.Key(r, key) }

// Take takes one hit now; it is TakeAt(ctx, r, key, clock()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	return s.TakeAt(ctx, r, key, s.base.Now())
}

// TakeAt takes one hit of key under r at now and decides it. The hit ends
// at Options.Timeout or when ctx ends, whichever is first. When the
// database cannot answer in time, a fail-open store logs and allows the
// hit with NotCounted set; a fail-closed store logs and returns an error
// wrapping ratelab.ErrUnavailable; if ctx ended, its error is returned
// under either policy. An invalid rule or instant, and a state of another
// rule with the same name (ratelab.ErrRuleConflict, the state left as it
// was), are errors under either policy.
func (s *Store) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return s.base.TakeAt(ctx, r, key, now, s.takeFixed, s.takeLocked)
}

// conn takes one of the pool's connections for a hit, and reports
// whether the hit queued for it behind the process's other hits.
func (s *Store) conn(ctx context.Context) (*sql.Conn, bool, error) {
	st := s.db.Stats()
	queued := sqlstore.Queued(st.InUse, st.MaxOpenConnections)
	c, err := s.db.Conn(ctx)
	return c, queued, sqlstore.Acquired(ctx, err, queued)
}

// countBits is how many low bits of the fixed statement's packed result
// hold the count; bit 63 says the row was replaced.
const countBits = 28

// takeFixed is the fixed window's one statement. Its packed result is 0
// when it set none: it inserted the row (one row affected) or the
// deadline had passed (none).
func (s *Store) takeFixed(ctx context.Context, h sqlstore.Hit) (ratelab.Decision, error) {
	conn, queued, err := s.conn(ctx)
	if err != nil {
		return ratelab.Decision{}, err
	}
	defer conn.Close()
	res, err := conn.ExecContext(ctx, s.q.fixed, fixedArgs(h)...)
	if err != nil {
		return ratelab.Decision{}, sqlstore.Acquired(ctx, err, queued)
	}
	packed, err := res.LastInsertId()
	if err != nil {
		return ratelab.Decision{}, err
	}
	if packed == 0 {
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return ratelab.Decision{}, cmp.Or(err, sqlstore.ErrLate)
		}
		return h.FixedDecision(1, h.Fixed().Fresh) // a new row
	}
	if packed < 0 {
		s.base.Log.Warn("mysqlstore: replaced a corrupt state", "key", h.Key)
		packed &= math.MaxInt64
	}
	return h.FixedDecision(packed&(1<<countBits-1), packed>>countBits)
}

// takeLocked runs package algorithm's step on the row under its lock.
func (s *Store) takeLocked(ctx context.Context, h sqlstore.Hit) (d ratelab.Decision, err error) {
	conn, queued, err := s.conn(ctx)
	if err != nil {
		return d, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return d, sqlstore.Acquired(ctx, err, queued)
	}
	defer func() {
		if err != nil {
			tx.Rollback()
			// The server answered this hit (START TRANSACTION): a hit that
			// ran out of time since waited on a busy server.
			err = sqlstore.Answered(ctx, err)
		}
	}()
	// Create the row, or take its lock if it exists: SELECT … FOR UPDATE
	// alone locks no row that does not exist yet.
	if _, err = tx.ExecContext(ctx, s.q.ensure, h.Key); err != nil {
		return d, err
	}
	var old []byte
	var inTime bool
	if err = tx.QueryRowContext(ctx, s.q.lock, h.Deadline, h.Key).Scan(&old, &inTime); err != nil {
		return d, err
	}
	if !inTime {
		return d, sqlstore.ErrLate
	}
	res, err := algorithm.Take(nil, old, h.Rule, h.Now)
	if err != nil {
		return d, err
	}
	if res.Replaced != nil && len(old) > 0 {
		s.base.Log.Warn("mysqlstore: replaced a corrupt state", "key", h.Key, "cause", res.Replaced)
	}
	if res.State != nil {
		if _, err = tx.ExecContext(ctx, s.q.update, res.State, sqlstore.Expiry(res.Decision, h.Now), h.Key); err != nil {
			return d, err
		}
	}
	return res.Decision, tx.Commit()
}

// Reset forgets the state of key under r: one DELETE, atomic against any
// hit that runs before or after it.
func (s *Store) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	if err := r.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.base.Timeout)
	defer cancel()
	q := s.q.resetState
	if r.Normalized().Algorithm == ratelab.FixedWindow {
		q = s.q.resetFixed
	}
	if _, err := s.db.ExecContext(ctx, q, s.Key(r, key)); err != nil {
		return fmt.Errorf("mysqlstore: reset: %w", err)
	}
	return nil
}

// setup is a connector that runs one statement on each new connection,
// and carries on where the server does not know it (MySQL answers 1193,
// unknown system variable, to max_statement_time).
type setup struct {
	driver.Connector
	stmt string
}

func (c setup) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
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
	return conn, nil
}
