package postgresstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/sql_store"
)

// queries are the store's statements, with the tables' prefix filled in.
type queries struct {
	fixed, replace string
	lock, update   string
}

// !+fixed

// fixedSQL is the fixed window's hit. Its arguments: the key, a new
// window's reset_at, now, the latest reset_at still this rule's, the cap
// (limit + 1), the deadline (Unix µs), the largest count and the latest
// reset_at any rule writes. Both SET expressions read the old row. The
// row is changed only while the server's clock is before the deadline —
// checked when the row is locked, so a statement that waited in a queue
// or behind a stopped server counts nothing — and only if it holds
// values a rule could have written; otherwise no row comes back.
const fixedSQL = `INSERT INTO {fixed} AS s (k, count, reset_at)
SELECT $1::text, 1, $2::bigint WHERE clock_timestamp() < to_timestamp($6::float8 / 1e6)
ON CONFLICT (k) DO UPDATE SET
  count = CASE WHEN s.reset_at <= $3 THEN 1
               WHEN s.reset_at > $4 THEN s.count
               ELSE LEAST(s.count + 1, $5) END,
  reset_at = CASE WHEN s.reset_at <= $3 THEN $2 ELSE s.reset_at END
WHERE clock_timestamp() < to_timestamp($6::float8 / 1e6)
  AND s.count BETWEEN 0 AND $7 AND s.reset_at <= $8
RETURNING count, reset_at`

// !-fixed

// replaceSQL starts a fresh window in place of a row no rule could have
// written. Its arguments: the key, the fresh reset_at, the largest count
// and the latest reset_at any rule writes, the deadline (Unix µs).
const replaceSQL = `UPDATE {fixed} SET count = 1, reset_at = $2
WHERE k = $1 AND NOT (count BETWEEN 0 AND $3 AND reset_at <= $4)
  AND clock_timestamp() < to_timestamp($5::float8 / 1e6)
RETURNING count, reset_at`

func newQueries(prefix string) queries {
	r := sqlstore.Names(prefix)
	return queries{
		fixed:   r.Replace(fixedSQL),
		replace: r.Replace(replaceSQL),
		// Creates the row, or locks it, and returns its state and whether
		// the server's clock is still before the deadline (Unix µs) once
		// the row is locked: the no-op SET makes ON CONFLICT take the row
		// lock that DO NOTHING would not.
		lock: r.Replace(`INSERT INTO {state} AS s (k, state, expires_at) VALUES ($1, '', 0)
ON CONFLICT (k) DO UPDATE SET k = s.k
RETURNING state, clock_timestamp() < to_timestamp($2::float8 / 1e6)`),
		update: r.Replace(`UPDATE {state} SET state = $1, expires_at = $2 WHERE k = $3`),
	}
}

// tables are the store's statements on its tables other than hits.
func tables(prefix string) sqlstore.Tables {
	r := sqlstore.Names(prefix)
	return sqlstore.Tables{
		Create: []string{
			r.Replace(`CREATE TABLE IF NOT EXISTS {fixed} (k text PRIMARY KEY, count bigint NOT NULL, reset_at bigint NOT NULL)`),
			r.Replace(`CREATE INDEX IF NOT EXISTS {fixed}_reset_at ON {fixed} (reset_at)`),
			r.Replace(`CREATE TABLE IF NOT EXISTS {state} (k text PRIMARY KEY, state bytea NOT NULL, expires_at bigint NOT NULL)`),
			r.Replace(`CREATE INDEX IF NOT EXISTS {state}_expires_at ON {state} (expires_at)`),
		},
		ResetFixed: r.Replace(`DELETE FROM {fixed} WHERE k = $1`),
		ResetState: r.Replace(`DELETE FROM {state} WHERE k = $1`),
		SweepFixed: r.Replace(`DELETE FROM {fixed} WHERE k IN (SELECT k FROM {fixed} WHERE reset_at <= $1 LIMIT $2)`),
		SweepState: r.Replace(`DELETE FROM {state} WHERE k IN (SELECT k FROM {state} WHERE expires_at <= $1 LIMIT $2)`),
		ClearFixed: r.Replace(`DELETE FROM {fixed}`),
		ClearState: r.Replace(`DELETE FROM {state}`),
		ProbeFixed: r.Replace(`DELETE FROM {fixed} WHERE 1 = 0`),
		ProbeState: r.Replace(`DELETE FROM {state} WHERE 1 = 0`),
	}
}

// SweepBatch is how many rows one DELETE of Sweep removes at most.
const SweepBatch = sqlstore.SweepBatch

// SweepAt deletes the states that can no longer weigh on a hit at now
// (windows over, allowances full again, MaxSkew later), SweepBatch rows
// per statement until none is left, and returns how many it deleted.
func (s *Store) SweepAt(ctx context.Context, now time.Time) (int64, error) {
	return s.base.Sweep(ctx, now)
}

// Sweep is SweepAt(clock()).
func (s *Store) Sweep(ctx context.Context) (int64, error) { return s.SweepAt(ctx, s.base.Now()) }

// CreateTables creates the store's two tables if they do not exist.
func (s *Store) CreateTables(ctx context.Context) error { return s.base.CreateTables(ctx) }

// ErrRefused is wrapped by CheckServer's error when the server answered
// but refused the settings: a wrong user or password, a database that
// does not exist or may not be used, tables that may not be created.
// That is a configuration error to fix before serving, not an outage for
// the fail policy.
var ErrRefused = errors.New("postgresstore: the server refused the connection's settings")

// CheckServer connects, and creates the tables if they are missing: one
// query when they exist, cheap enough for a CGI process to run on every
// request (and CREATE INDEX takes a lock that would queue behind hits).
// It returns nil when both work, an error wrapping ErrRefused when the
// server refused (see ErrRefused), one wrapping ratelab.ErrBusy when it
// turned the connection away for want of a free one, and another error
// when it cannot be reached or did not answer in time: hits handle both as
// they come (see TakeAt).
func (s *Store) CheckServer(ctx context.Context) error {
	n, err := s.tables(ctx)
	if err == nil && n < 2 {
		err = s.CreateTables(ctx)
		// CREATE … IF NOT EXISTS is not safe against itself: of two
		// sessions creating one table, the second can fail on the
		// catalog's unique index. Once the first is done, it succeeds.
		for try := 0; createRace(err) && poll.Backoff(ctx, try+3); try++ {
			err = s.CreateTables(ctx)
		}
	}
	if err == nil {
		err = s.base.CheckWrites(ctx)
	}
	var pe *pgconn.PgError
	switch {
	case overloaded(err):
		return fmt.Errorf("%w: %w", ratelab.ErrBusy, err)
	case errors.As(err, &pe), refused(err):
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return err
}

// createRace reports whether err is a CREATE that lost a race with
// another session's creation of the same object.
func createRace(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P07" || pe.Code == "42710")
}

// HasTables reports whether either of the store's tables exists.
func (s *Store) HasTables(ctx context.Context) (bool, error) {
	n, err := s.tables(ctx)
	return n > 0, err
}

// tables counts the store's tables that exist: 0, 1 or 2.
func (s *Store) tables(ctx context.Context) (n int, err error) {
	err = s.pool.QueryRow(ctx, "SELECT (to_regclass($1) IS NOT NULL)::int + (to_regclass($2) IS NOT NULL)::int",
		s.base.Prefix+"fixed", s.base.Prefix+"state").Scan(&n)
	return n, err
}

// Connections returns how many client connections the server accepts
// from users without special roles: max_connections less the slots
// reserved for superusers (and, from PostgreSQL 16, reserved_connections).
func (s *Store) Connections(ctx context.Context) (int, error) {
	u, err := s.Usage(ctx)
	return u.Usable(), err
}

// Usage reads what Connections reads, and how many client backends are
// open besides this session, in pg_stat_activity. A role without
// pg_read_all_stats sees no other role's backend_type: such a row counts
// as a client if it has a database and a user, as a client's has and
// the server's own processes' (autovacuum, the checkpointer) have not,
// so a parallel worker or a replication sender may count too: it errs
// towards more. A server that will not tell leaves the count unread
// (Usage.Unread), which is no error.
func (s *Store) Usage(ctx context.Context) (sqlstore.Usage, error) {
	var u sqlstore.Usage
	err := s.pool.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
  current_setting('superuser_reserved_connections')::int
  + coalesce(current_setting('reserved_connections', true), '0')::int`).Scan(&u.Max, &u.Reserved)
	if err != nil {
		return u, fmt.Errorf("postgresstore: read max_connections: %w", err)
	}
	err = s.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND datid IS NOT NULL AND usesysid IS NOT NULL
  AND coalesce(backend_type, 'client backend') = 'client backend'`).Scan(&u.InUse)
	if err != nil {
		u.Unread = fmt.Errorf("postgresstore: read pg_stat_activity: %w", err)
	}
	return u, nil
}
