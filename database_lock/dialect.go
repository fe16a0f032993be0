package databaselock

// dialect is what differs between the two servers: how a session names
// itself, how the server shows that it waits for a lock, and the SQL of
// each lesson.
type dialect struct {
	key, name, driver string
	sessionID         string // one row: the server's id of this connection
	waiting           string // one row: > 0 while the session waits for a lock
	waitingArgs       int    // how many placeholders of waiting take the session's id
	isolation         string // one row: the default isolation level
	// snapshotIsolation is the server's setting that makes REPEATABLE
	// READ refuse a write to a row changed since the snapshot, where
	// there is one.
	snapshotIsolation string
	tables            []string
	// upsert is the atomic hit on row 'k'; reset_at is 0 in these lessons.
	upsert string
	// resetFirst and countFirst are the hit on an expired window ('order',
	// count 6, reset_at 100) at now = 200: reset_at assigned before count,
	// and count before reset_at.
	resetFirst, countFirst string
	// leftToRight says whether each SET assignment sees the ones before
	// it (MySQL's order) rather than the old row (the SQL standard's).
	leftToRight bool
	// ownLock are the statements that take the server's own lock on
	// "demo" (the last one blocks while another session holds it), which
	// a session releases when its connection ends.
	ownLock     []string
	ownLockName string
	// articleLock is the second article's lock, an upsert of the lock row
	// inside a transaction kept open as the lock.
	articleLock string
}

var dialects = map[string]*dialect{
	"mariadb":  mariadb,
	"postgres": postgres,
}

var mariadb = &dialect{
	key: "mariadb", name: "MariaDB", driver: "mysql",
	sessionID: `SELECT CONNECTION_ID()`,
	waiting: `SELECT (SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT')
  + (SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND STATE = 'User lock')`,
	waitingArgs: 2, leftToRight: true,
	isolation: `SELECT @@tx_isolation`, snapshotIsolation: "innodb_snapshot_isolation",
	tables: []string{
		`DROP TABLE IF EXISTS lesson_hits, lesson_locks`,
		`CREATE TABLE lesson_hits (k VARCHAR(20) PRIMARY KEY, count BIGINT NOT NULL, reset_at BIGINT NOT NULL) ENGINE=InnoDB`,
		`CREATE TABLE lesson_locks (name VARCHAR(20) PRIMARY KEY, locked_at DATETIME NULL) ENGINE=InnoDB`,
	},
	upsert: `INSERT INTO lesson_hits (k, count, reset_at) VALUES ('k', 1, 0)
ON DUPLICATE KEY UPDATE count = count + 1`,
	resetFirst: `INSERT INTO lesson_hits (k, count, reset_at) VALUES ('order', 1, 3800)
ON DUPLICATE KEY UPDATE
  reset_at = IF(reset_at <= 200, 3800, reset_at),
  count = IF(reset_at <= 200, 1, count + 1)`,
	countFirst: `INSERT INTO lesson_hits (k, count, reset_at) VALUES ('order', 1, 3800)
ON DUPLICATE KEY UPDATE
  count = IF(reset_at <= 200, 1, count + 1),
  reset_at = IF(reset_at <= 200, 3800, reset_at)`,
	ownLock: []string{`SELECT GET_LOCK('demo', 30)`}, ownLockName: "GET_LOCK",
	articleLock: `INSERT INTO lesson_locks (name, locked_at) VALUES ('demo', NOW())
ON DUPLICATE KEY UPDATE locked_at = NOW()`,
}

var postgres = &dialect{
	key: "postgres", name: "PostgreSQL", driver: "pgx",
	sessionID: `SELECT pg_backend_pid()`,
	waiting:   `SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, waitingArgs: 1,
	isolation: `SELECT upper(current_setting('transaction_isolation'))`,
	tables: []string{
		`DROP TABLE IF EXISTS lesson_hits, lesson_locks`,
		`CREATE TABLE lesson_hits (k text PRIMARY KEY, count bigint NOT NULL, reset_at bigint NOT NULL)`,
		`CREATE TABLE lesson_locks (name text PRIMARY KEY, locked_at timestamptz)`,
	},
	upsert: `INSERT INTO lesson_hits AS h (k, count, reset_at) VALUES ('k', 1, 0)
ON CONFLICT (k) DO UPDATE SET count = h.count + 1 RETURNING count`,
	resetFirst: `INSERT INTO lesson_hits AS h (k, count, reset_at) VALUES ('order', 1, 3800)
ON CONFLICT (k) DO UPDATE SET
  reset_at = CASE WHEN h.reset_at <= 200 THEN 3800 ELSE h.reset_at END,
  count = CASE WHEN h.reset_at <= 200 THEN 1 ELSE h.count + 1 END`,
	countFirst: `INSERT INTO lesson_hits AS h (k, count, reset_at) VALUES ('order', 1, 3800)
ON CONFLICT (k) DO UPDATE SET
  count = CASE WHEN h.reset_at <= 200 THEN 1 ELSE h.count + 1 END,
  reset_at = CASE WHEN h.reset_at <= 200 THEN 3800 ELSE h.reset_at END`,
	ownLock: []string{`BEGIN`, `SELECT pg_advisory_xact_lock(42)`}, ownLockName: "pg_advisory_xact_lock",
	articleLock: `INSERT INTO lesson_locks (name, locked_at) VALUES ('demo', now())
ON CONFLICT (name) DO UPDATE SET locked_at = now()`,
}
