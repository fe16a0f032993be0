package mysqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/sql_store"
)

// queries are the store's statements, with the tables' prefix filled in.
type queries struct {
	hot, fixed             string
	ensure, lock, update   string // MySQL's locked hit
	lockBlock, updateBlock string // MariaDB's
}

// !+hot

// hotSQL is the fixed window's hit on a row that holds a sound, live
// window of the rule — every hit of a key but its window's first: an
// UPDATE of one column, computed from the old row, which the server runs
// prepared (see execPrepared) and for less than the upsert below. The
// deadline is checked once the row is locked. LAST_INSERT_ID(expr) hands
// back reset_at << 28 | count, never 0, whenever a row matched, changed
// or not (a count stopped at the cap changes nothing, and affected rows
// count changed rows only); the server sends 0 when none matched — no
// row, a window over, another rule's or a corrupt row, or the deadline
// passed — and the hit is then fixedSQL's. IGNORE INDEX spares the
// optimizer weighing reset_at's index against the primary key.
//
// Its arguments, by name (see hotArgs): cap, key, t + 1, live, maxCount,
// deadline.
const hotSQL = `UPDATE {fixed} IGNORE INDEX (reset_at) SET count = LAST_INSERT_ID(reset_at << 28 | LEAST(count + 1, ?)) & 268435455
WHERE k = ? AND reset_at BETWEEN ? AND ? AND count BETWEEN 0 AND ?
  AND UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 < ?`

// !-hot

// !+fixed

// fixedSQL is the fixed window's hit where hotSQL matched no row, written
// so that no assignment reads a column another one wrote: the same
// statement under MySQL's left-to-right assignments and MariaDB's
// SIMULTANEOUS_ASSIGNMENT. count is computed from the old row; reset_at
// from the old reset_at alone. LAST_INSERT_ID(expr) hands the result back
// in the OK packet — reset_at << 28 | count, bit 63 set when the row held
// values no rule writes and was replaced — in the same round trip,
// without RETURNING. The row is touched only while the server's clock is
// before the deadline.
//
// Its arguments, by name (see fixedArgs): key, fresh, deadline; then t,
// maxReset, fresh, maxReset, maxCount, live, cap; then t, maxReset, fresh.
const fixedSQL = `INSERT INTO {fixed} (k, count, reset_at)
SELECT ?, 1, ? FROM DUAL WHERE UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 < ?
ON DUPLICATE KEY UPDATE
  count = LAST_INSERT_ID(IF(reset_at <= ? OR reset_at > ?,
    ? << 28 | 1 | IF(reset_at > ?, 1 << 63, 0),
    reset_at << 28 | IF(count < 0 OR count > ?, 1 | 1 << 63,
                        IF(reset_at > ?, count, LEAST(count + 1, ?))))) & 268435455,
  reset_at = IF(reset_at <= ? OR reset_at > ?, ?, reset_at)`

// !-fixed

// hotArgs are hotSQL's arguments for hit h, whose bounds are b.
func hotArgs(h sqlstore.Hit, b algorithm.FixedBounds) []any {
	return []any{b.Cap, h.Key, b.T + 1, b.Live, b.MaxCount, h.Deadline}
}

// fixedArgs are fixedSQL's arguments for hit h, whose bounds are b.
func fixedArgs(h sqlstore.Hit, b algorithm.FixedBounds) []any {
	return []any{h.Key, b.Fresh, h.Deadline,
		b.T, b.MaxReset, b.Fresh, b.MaxReset, b.MaxCount, b.Live, b.Cap,
		b.T, b.MaxReset, b.Fresh}
}

func newQueries(prefix string) queries {
	r := sqlstore.Names(prefix)
	return queries{
		hot:    r.Replace(hotSQL),
		fixed:  r.Replace(fixedSQL),
		ensure: r.Replace(`INSERT INTO {state} (k, state, expires_at) VALUES (?, '', 0) ON DUPLICATE KEY UPDATE k = k`),
		// The state, and whether the server's clock is still before the
		// deadline (Unix µs) once the row is locked.
		lock:   r.Replace(`SELECT state, UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 < ? FROM {state} WHERE k = ? FOR UPDATE`),
		update: r.Replace(`UPDATE {state} SET state = ?, expires_at = ? WHERE k = ?`),
		// One statement each, to be one round trip each without the
		// driver's multiStatements: a transaction begun in an anonymous
		// block stays open after it. The no-op assignment takes the row's
		// lock, as the ensure above; RETURNING is evaluated once the row
		// is locked.
		lockBlock: r.Replace(`BEGIN NOT ATOMIC
  START TRANSACTION;
  INSERT INTO {state} (k, state, expires_at) VALUES (?, '', 0) ON DUPLICATE KEY UPDATE k = k
    RETURNING state, UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 < ?;
END`),
		updateBlock: r.Replace(`BEGIN NOT ATOMIC
  UPDATE {state} SET state = ?, expires_at = ? WHERE k = ?;
  COMMIT;
END`),
	}
}

// tables are the store's statements on its tables other than hits.
func tables(prefix string) sqlstore.Tables {
	r := sqlstore.Names(prefix)
	return sqlstore.Tables{
		Create: []string{
			r.Replace(`CREATE TABLE IF NOT EXISTS {fixed} (
  k VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  count BIGINT NOT NULL,
  reset_at BIGINT NOT NULL,
  KEY (reset_at)
) ENGINE=InnoDB`),
			r.Replace(`CREATE TABLE IF NOT EXISTS {state} (
  k VARCHAR(80) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
  state BLOB NOT NULL,
  expires_at BIGINT NOT NULL,
  KEY (expires_at)
) ENGINE=InnoDB`),
		},
		ResetFixed: r.Replace(`DELETE FROM {fixed} WHERE k = ?`),
		ResetState: r.Replace(`DELETE FROM {state} WHERE k = ?`),
		SweepFixed: r.Replace(`DELETE FROM {fixed} WHERE reset_at <= ? LIMIT ?`),
		SweepState: r.Replace(`DELETE FROM {state} WHERE expires_at <= ? LIMIT ?`),
		ClearFixed: r.Replace(`DELETE FROM {fixed}`),
		ClearState: r.Replace(`DELETE FROM {state}`),
		ProbeFixed: r.Replace(`DELETE FROM {fixed} WHERE 1 = 0`),
		ProbeState: r.Replace(`DELETE FROM {state} WHERE 1 = 0`),
	}
}

// CreateTables creates the store's two tables if they do not exist.
func (s *Store) CreateTables(ctx context.Context) error { return s.base.CreateTables(ctx) }

// SweepBatch is how many rows one DELETE of Sweep removes at most.
const SweepBatch = sqlstore.SweepBatch

// Sweep is SweepAt(clock()).
func (s *Store) Sweep(ctx context.Context) (int64, error) { return s.SweepAt(ctx, s.base.Now()) }

// SweepAt deletes the states that can no longer weigh on a hit at now
// (windows over, allowances full again, MaxSkew later), SweepBatch rows
// per statement until none is left, and returns how many it deleted.
func (s *Store) SweepAt(ctx context.Context, now time.Time) (int64, error) {
	return s.base.Sweep(ctx, now)
}

// ErrRefused is wrapped by CheckServer's error when the server answered
// but refused the settings: a wrong user or password, a database that
// does not exist or may not be used, tables that may not be created.
// That is a configuration error to fix before serving, not an outage for
// the fail policy.
var ErrRefused = errors.New("mysqlstore: the server refused the connection's settings")

// CheckServer connects, and creates the tables if they are missing: one
// query when they exist, cheap enough for a CGI process to run on every
// request. It returns nil when both work, an error wrapping ErrRefused
// when the server refused (see ErrRefused), one wrapping ratelab.ErrBusy
// when it turned the connection away for want of a free one, and another
// error when it cannot be reached or did not answer in time: hits handle
// both as they come (see TakeAt).
func (s *Store) CheckServer(ctx context.Context) error {
	n, err := s.tables(ctx)
	if err == nil && n < 2 {
		err = s.base.CreateTables(ctx)
	}
	if err == nil {
		err = s.base.CheckWrites(ctx)
	}
	var me *mysql.MySQLError
	switch {
	case overloaded(err):
		return fmt.Errorf("%w: %w", ratelab.ErrBusy, err)
	case errors.As(err, &me), refused(err):
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	return err
}

// HasTables reports whether either of the store's tables exists.
func (s *Store) HasTables(ctx context.Context) (bool, error) {
	n, err := s.tables(ctx)
	return n > 0, err
}

// tables counts the store's tables that exist: 0, 1 or 2. The same query
// tells the server's version, learnt for the locked hits.
func (s *Store) tables(ctx context.Context) (n int, err error) {
	var version string
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*), VERSION() FROM information_schema.TABLES
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (?, ?)`, s.base.Prefix+"fixed", s.base.Prefix+"state").Scan(&n, &version)
	if err == nil {
		s.server.learn(version)
	}
	return n, err
}

// Connections returns how many client connections the server accepts in
// all: max_connections, or the user's max_user_connections if lower.
func (s *Store) Connections(ctx context.Context) (int, error) {
	u, err := s.Usage(ctx)
	return u.Usable(), err
}

// Usage reads what Connections reads, and how many client connections
// are open besides this session: Threads_connected less one. That counts
// every connection, the one MariaDB lets an account with SUPER (or
// CONNECTION ADMIN, from 10.5) open beyond max_connections included. A
// server that will not tell that count leaves it unread (Usage.Unread),
// which is no error.
func (s *Store) Usage(ctx context.Context) (sqlstore.Usage, error) {
	var u sqlstore.Usage
	if err := s.db.QueryRowContext(ctx, "SELECT @@max_connections, @@max_user_connections").Scan(&u.Max, &u.UserMax); err != nil {
		return u, fmt.Errorf("mysqlstore: read max_connections: %w", err)
	}
	var name string
	var open int
	if err := s.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &open); err != nil {
		u.Unread = fmt.Errorf("mysqlstore: read Threads_connected: %w", err)
		return u, nil
	}
	u.InUse = max(open-1, 0)
	return u, nil
}
