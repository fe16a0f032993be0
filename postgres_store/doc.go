// Package postgresstore keeps rate-limit states in PostgreSQL: several web
// servers sharing one database count together, where each with files of
// its own lets limit × hosts through.
//
// It uses pgx (github.com/jackc/pgx/v5) through its pool, pgxpool: the
// PostgreSQL driver Go programs use, which caches each statement prepared
// on a connection (a hit is then one round trip) and can send several
// statements in one round trip (a batch).
//
// # The fixed window is one statement
//
// The original's rule — a count and the instant its window ends — is one
// INSERT … ON CONFLICT DO UPDATE … RETURNING, atomic on the row: no other
// session reads the count between this hit's read and write, so none is
// lost (read-then-write in two statements loses them, as package
// database_lock shows). Every SET expression of PostgreSQL reads the old
// row, so the order of the assignments does not matter (in MySQL it does:
// see package mysqlstore). A window's count stops at limit + 1: past the
// limit every hit is refused until reset_at whatever the count, so the
// decisions are the file store's and the row stops growing. A row no rule
// could have written (a negative count, one past any limit, a window
// ending beyond any rule's) is replaced by a fresh window, and logged.
//
// # A hit reported failed is not counted later
//
// Every hit carries a deadline, four fifths into its timeout, and its
// statements change nothing once the server's clock (clock_timestamp())
// has passed it, checked when the row is locked: a statement that waited
// in the server's socket buffer behind a server that had stopped does not
// count a hit its client gave up on. See the database-lock chapter for the
// cases that remain.
//
// # Load is not an outage
//
// A hit waits its turn for one of its pool's connections (OpenPool's
// maxConns) within its timeout, and a server that turns a connection away
// for want of free ones (SQLSTATE 53300) is tried again after a short,
// randomised pause: it is busy, not gone. A server on loopback or a Unix
// socket is reached without a TLS attempt first. Connections tells how
// many connections the server accepts, to share out among the processes
// that use it, and Usage also how many are open.
//
// # The other algorithms take a row lock
//
// The sliding counter, the sliding log and GCRA keep package algorithm's
// encoding in a bytea and run its step in Go under the row's lock, in two
// round trips: BEGIN with an upsert that creates or locks the row and
// returns its state; then the UPDATE with COMMIT. A session that dies
// holding the lock releases it with its connection; one that waits gives
// up at lock_timeout, which OpenPool sets to four fifths of the hit's
// timeout.
//
// # Durability, sweeping
//
// Every hit is a commit. OpenPool's sessions commit without waiting for
// the write-ahead log to reach the disk (synchronous_commit=off, a
// setting of the session, not of the server): a crash of the server — not
// of a client — can forget the hits of its last moments (at most three
// times wal_writer_delay, 600 ms by default), and never corrupts a row.
// For a rate limit that costs a few hits in a rare event, and it halves
// the cost of a hit or better on the machine of docs/performance.md; put
// synchronous_commit=on in the URL to wait for the flush.
//
// Rows whose window is over stay until Sweep deletes them, in batches, so
// that no sweep holds locks long.
package postgresstore
