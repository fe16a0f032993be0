// Package mysqlstore keeps rate-limit states in MariaDB or MySQL, the
// database most shared-hosting plans give: several web servers sharing one
// database count together, where each with files of its own lets
// limit × hosts through.
//
// It uses database/sql with go-sql-driver/mysql, the driver Go programs
// use for the MySQL protocol; OpenDB sets it up for a limiter (interpolated
// parameters, so that a hit is one round trip and not a prepare, an
// execute and a close; short timeouts; a short InnoDB lock wait).
//
// # The fixed window is one statement
//
// The original's rule — a count and the instant its window ends — is one
// INSERT … ON DUPLICATE KEY UPDATE, atomic on the row: no other session
// reads the count between this hit's read and write, so none is lost
// (read-then-write in two statements loses them, as package database_lock
// shows). Two things about it are MySQL's own:
//
//   - The assignments of ON DUPLICATE KEY UPDATE run left to right, and
//     each sees the columns the ones before it assigned. count is
//     assigned before reset_at, so that count's test of whether the window
//     is over reads the old reset_at; in the other order an expired
//     window carries its count into the new one. (PostgreSQL evaluates
//     every SET expression against the old row.)
//   - The statement hands its result back in the OK packet, through
//     LAST_INSERT_ID(expr) — reset_at << 28 | count, which fits since a
//     count never exceeds limit + 1 ≤ 2^27 + 1 and reset_at 2^35 — so that
//     it works on MySQL too, which has no RETURNING (MariaDB 10.5+ has).
//
// A window's count stops at limit + 1: past the limit every hit is refused
// until reset_at whatever the count, so the decisions are the file
// store's and the row stops growing.
//
// # The other algorithms take a row lock
//
// The sliding counter, the sliding log and GCRA keep package algorithm's
// encoding in a BLOB and run its step in Go under the row's lock: in one
// transaction, an upsert that creates the row or locks it, SELECT … FOR
// UPDATE, the step, an UPDATE, COMMIT. A session that dies holding the
// lock releases it with its connection; one that waits gives up at the
// hit's timeout.
//
// # Durability, sweeping
//
// Every hit is a commit, durable by the server's settings
// (innodb_flush_log_at_trx_commit). Rows whose window is over stay until
// Sweep deletes them, in batches of DELETE … LIMIT so that no sweep holds
// locks long.
package mysqlstore
