package postgresstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/redact"
	sqlstore "github.com/ratelab/ratelab/sql_store"
)

// DefaultTimeout bounds one hit, lock wait included, by default.
const DefaultTimeout = sqlstore.DefaultTimeout

// Options configure a Store. The zero value fails open with a 2 s
// timeout and tables named ratelab_fixed and ratelab_state.
type Options struct {
	// Timeout bounds each hit, lock wait included; 0 means DefaultTimeout.
	// Give OpenPool the same timeout: the server's own bound, which keeps a
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

// Store is a PostgreSQL-backed rate-limit store for every algorithm, safe
// for concurrent use by any number of goroutines, processes and hosts
// sharing one database. Create its tables once with CreateTables.
type Store struct {
	pool *pgxpool.Pool
	base *sqlstore.Base
	q    queries
}

// New returns a Store on pool, which OpenPool makes. New does not contact
// the server: a database that is down is a failure of the first hits,
// handled by the fail policy.
func New(pool *pgxpool.Pool, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("postgresstore: New needs a pool")
	}
	s := &Store{pool: pool}
	exec := func(ctx context.Context, q string, args ...any) (int64, error) {
		tag, err := pool.Exec(ctx, q, args...)
		return tag.RowsAffected(), err
	}
	base, err := sqlstore.NewBase("postgresstore", sqlstore.Options(opts), sqlstore.Driver{
		Overloaded: overloaded, OutOfTime: outOfTime, Refused: refused, ErrRefused: ErrRefused, Tables: tables, Exec: exec})
	if err != nil {
		return nil, err
	}
	s.base, s.q = base, newQueries(base.Prefix)
	return s, nil
}

// OpenPool makes a pool for a Store from a postgres:// URL or a key=value
// connection string, and does not connect. Its connections time out after
// timeout (0: DefaultTimeout), and the server gives up on a statement — a
// row lock's wait included (lock_timeout, statement_timeout) — at four
// fifths of it, before the client does. At most maxConns connections are
// open at once (0: DefaultMaxConns); a hit waits its turn for one. Size
// it so that the processes sharing the server, together, stay below what
// Connections reports: a server that turns connections away is waited
// out, but only within the timeout.
//
// A server on a loopback address or a Unix socket is reached without
// trying TLS first, unless the URL or PGSSLMODE sets sslmode: pgx's
// default, sslmode=prefer, asks for TLS, and when the server says no,
// connects again in plain text — twice the cost, on a path that every
// CGI process takes once per request. Its sessions commit without waiting
// for the WAL flush (synchronous_commit=off) unless the URL sets
// synchronous_commit: see the package doc.
func OpenPool(url string, timeout time.Duration, maxConns int) (*pgxpool.Pool, error) {
	if err := checkUserinfo(url); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgresstore: %w", redact.Err(err, url))
	}
	if maxConns < 0 || maxConns > math.MaxInt32 {
		return nil, fmt.Errorf("postgresstore: maxConns %d must be from 0 to %d", maxConns, math.MaxInt32)
	}
	timeout = cmp.Or(max(timeout, 0), DefaultTimeout)
	cfg.ConnConfig.ConnectTimeout = timeout
	server := strconv.FormatInt(sqlstore.ServerTimeout(timeout).Milliseconds(), 10)
	cfg.ConnConfig.RuntimeParams["lock_timeout"] = server
	cfg.ConnConfig.RuntimeParams["statement_timeout"] = server
	if _, set := cfg.ConnConfig.RuntimeParams["synchronous_commit"]; !set {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if !sslModeSet(url) && local(cfg.ConnConfig) {
		cfg.ConnConfig.Fallbacks = plain(cfg.ConnConfig.Fallbacks, &cfg.ConnConfig.Config)
		cfg.ConnConfig.TLSConfig = nil
	}
	cfg.MaxConns = int32(cmp.Or(maxConns, DefaultMaxConns))
	cfg.MaxConnIdleTime = time.Minute
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("postgresstore: %w", redact.Err(err, url))
	}
	return pool, nil
}

// DefaultMaxConns is how many connections a pool of OpenPool opens at
// most by default.
const DefaultMaxConns = sqlstore.DefaultMaxConns

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

// takeFixed is the fixed window's one statement. When it returns no row,
// the row is corrupt or the deadline passed: the replacement, which
// changes only a corrupt row, tells which — or, if another hit replaced
// the row first, the statement runs once more.
func (s *Store) takeFixed(ctx context.Context, h sqlstore.Hit) (ratelab.Decision, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ratelab.Decision{}, err
	}
	defer conn.Release()
	b := h.Fixed()
	var count, resetAt int64
	for range 2 {
		err := conn.QueryRow(ctx, s.q.fixed, h.Key, b.Fresh, b.T, b.Live, b.Cap, h.Deadline, b.MaxCount, b.MaxReset).Scan(&count, &resetAt)
		if errors.Is(err, pgx.ErrNoRows) {
			err = conn.QueryRow(ctx, s.q.replace, h.Key, b.Fresh, b.MaxCount, b.MaxReset, h.Deadline).Scan(&count, &resetAt)
			if err == nil {
				s.base.Log.Warn("postgresstore: replaced a corrupt state", "key", h.Key)
			}
		}
		switch {
		case err == nil:
			return h.FixedDecision(count, resetAt)
		case !errors.Is(err, pgx.ErrNoRows):
			return ratelab.Decision{}, err
		}
	}
	return ratelab.Decision{}, sqlstore.ErrLate
}

// takeLocked runs package algorithm's step on the row under its lock, in
// two round trips: BEGIN and the locking upsert; the UPDATE and COMMIT.
func (s *Store) takeLocked(ctx context.Context, h sqlstore.Hit) (ratelab.Decision, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ratelab.Decision{}, err
	}
	// A connection released inside a transaction (an error below) is
	// closed by the pool, never reused: its lock goes with it.
	defer conn.Release()
	var old []byte
	var inTime bool
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(s.q.lock, h.Key, h.Deadline).QueryRow(func(row pgx.Row) error { return row.Scan(&old, &inTime) })
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return ratelab.Decision{}, err
	}
	res, err := algorithm.Take(nil, old, h.Rule, h.Now)
	if err == nil && !inTime {
		err = sqlstore.ErrLate
	}
	if err != nil {
		conn.Exec(ctx, "ROLLBACK")
		return ratelab.Decision{}, err
	}
	if res.Replaced != nil && len(old) > 0 {
		s.base.Log.Warn("postgresstore: replaced a corrupt state", "key", h.Key, "cause", res.Replaced)
	}
	b = &pgx.Batch{}
	if res.State != nil {
		b.Queue(s.q.update, res.State, sqlstore.Expiry(res.Decision, h.Now), h.Key)
	}
	b.Queue("COMMIT")
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return ratelab.Decision{}, err
	}
	return res.Decision, nil
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

// checkUserinfo refuses a URL whose authority holds more than one '@': a
// password with a bare '@' in it. pgx reads the host from the first '@',
// net/url (and so ratelab's masking) from the last, and what lies
// between — the password's tail — was printed as a host nobody could
// resolve, in serve's logs (the attacker's finding). Nor may an '@' come
// after the authority: a password holding a '/', '?' or '#' ends the host
// early, and pgx took the rest for the database's name, which its
// messages quote (the attacker's findings at 5879fdb and 657a847).
func checkUserinfo(url string) error {
	_, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil // a key=value DSN: no authority
	}
	path := ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest, path = rest[:i], rest[i:]
	}
	if strings.Count(rest, "@") > 1 {
		return errors.New("postgresstore: the URL's user information holds an '@': write it as %40 in the password")
	}
	if strings.Contains(path, "@") {
		return errors.New("postgresstore: the URL holds an '@' after its host: a password holding '/', '?' or '#' ends the host early; write them as %2F, %3F and %23 (and an '@' anywhere as %40)")
	}
	return nil
}
