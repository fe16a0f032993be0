// Package mysqlstore keeps rate-limit states in MariaDB or MySQL, the
// database most shared-hosting plans give: several web servers sharing one
// database count together, where each with files of its own lets
// limit × hosts through.
//
// It uses database/sql with go-sql-driver/mysql, the driver Go programs
// use for the MySQL protocol; OpenDB sets it up for a limiter (interpolated
// parameters, so that a hit is one round trip and not a prepare, an
// execute and a close — the fixed window's UPDATE alone is prepared, once
// per connection; short timeouts; an InnoDB lock wait no shorter than the
// hit may take).
//
// # The fixed window counts in one statement
//
// The original's rule — a count and the instant its window ends — counts
// a hit in one statement, atomic on the row: no other session reads the count between
// this hit's read and write, so none is lost (read-then-write in two
// statements loses them, as package database_lock shows). A hit on a row
// that holds a live window of its rule — every hit of a key but the
// window's first — is an UPDATE of the count, which the server prepares
// once per connection instead of parsing at every hit; where it matched
// no row (none yet, a window over, a row of another rule or one no rule
// wrote, a deadline passed), an INSERT … ON DUPLICATE KEY UPDATE follows,
// which creates or renews the row. Three things about them are MySQL's
// own:
//
//   - The assignments of ON DUPLICATE KEY UPDATE run left to right, and
//     each sees the columns the ones before it assigned — unless MariaDB's
//     SIMULTANEOUS_ASSIGNMENT mode is set, and then every one sees the old
//     row. The statements hold under both: count is computed from the old
//     row, reset_at from the old reset_at alone, and no expression reads a
//     column another one wrote. (PostgreSQL evaluates every SET expression
//     against the old row.)
//   - Each statement hands its result back in the OK packet, through
//     LAST_INSERT_ID(expr) — reset_at << 28 | count, which fits since a
//     count never exceeds limit + 1 ≤ 2^27 + 1 and reset_at 2^35, and bit
//     63 for a row it replaced — so that it works on MySQL too, which has
//     no RETURNING (MariaDB 10.5+ has).
//   - The UPDATE's affected rows count the rows it changed, not those it
//     matched: a count stopped at the cap changes nothing. The server
//     sends LAST_INSERT_ID's value whenever the expression ran, and 0 when
//     no row matched, which is what tells the two apart.
//
// A window's count stops at limit + 1: past the limit every hit is refused
// until reset_at whatever the count, so the decisions are the file
// store's and the row stops growing. A row no rule could have written (a
// negative count, one past any limit, a window ending beyond any rule's)
// is replaced by a fresh window, and logged.
//
// # A hit reported failed is not counted later
//
// Every hit carries a deadline, four fifths into its timeout, and its
// statement changes nothing once the server's clock (SYSDATE(6)) has
// passed it — the fixed window's UPDATE checks it once it holds the row:
// a statement that waited in the server's socket buffer behind a server
// that had stopped, or for a row another transaction held, does not count
// a hit its client gave up on.
// max_statement_time, which OpenDB sets on every MariaDB connection,
// bounds a wait for a row lock the same way; MySQL has no such setting for
// an INSERT (see OpenDB). See the database-lock chapter for the cases
// that remain.
//
// # Load is not an outage
//
// A hit waits its turn for one of its pool's connections (OpenDB's
// maxConns) within its timeout, and a server that turns a connection away
// for want of free ones (error 1040 or 1203) is tried again after a short,
// randomised pause: it is busy, not gone. Connections tells how many the
// server accepts, to share out among the processes that use it, and Usage
// also how many are open.
//
// # The other algorithms take a row lock
//
// The sliding counter, the sliding log and GCRA keep package algorithm's
// encoding in a BLOB and run its step in Go under the row's lock, in one
// transaction. On MariaDB from 10.5 that is two round trips, each one
// anonymous block (BEGIN NOT ATOMIC … END), so that the driver needs no
// multiStatements: START TRANSACTION and an INSERT … ON DUPLICATE KEY
// UPDATE … RETURNING that creates the row or locks it and returns its
// state; then, after the step, the UPDATE and COMMIT. MySQL has neither
// blocks nor RETURNING, and takes five: START TRANSACTION, the upsert,
// SELECT … FOR UPDATE, UPDATE, COMMIT. The store learns which server it
// is from the query CheckServer runs anyway, or else once, at its first
// locked hit. A session that dies holding the lock releases it with its
// connection; one that waits gives up at the hit's timeout.
//
// A hit's end — its timeout, or its context's — is kept at the socket of
// a connection OpenDB made: the driver keeps a context with a goroutine
// per connection, woken twice a statement, which cost a fixed-window hit
// a third of its time on a busy two-core machine.
//
// # Durability, sweeping
//
// Every hit is a commit, durable by the server's settings
// (innodb_flush_log_at_trx_commit). Rows whose window is over stay until
// Sweep deletes them, in batches of DELETE … LIMIT so that no sweep holds
// locks long.
package mysqlstore
