// Package databaselock shows, on real MariaDB and PostgreSQL servers, what
// the second article's database lock and a database-backed counter get
// right and wrong.
//
// Each client is a child process (this binary re-executed as the
// package's session role) with a connection of its own, and runs the
// statements its parent sends it, one at a time. Where a statement is to
// wait for another session's lock, the parent asks the server until it
// reports that session waiting (information_schema on MariaDB,
// pg_stat_activity on PostgreSQL) before it takes the next step: the
// interleaving is the same on every run, never a matter of luck.
//
//   - read, then write, in two statements: two hits on a count of 5 leave
//     6, under PostgreSQL's READ COMMITTED and MariaDB's REPEATABLE READ
//     alike — unless MariaDB's innodb_snapshot_isolation is on (the
//     default from MariaDB 11.6.2), and then the second writer's UPDATE is
//     refused with ERROR 1020 and its retry counts on top. Where the
//     server has the setting, the lesson runs with it off and with it on;
//     where it has not (MySQL, older MariaDB), as the server is;
//   - SELECT … FOR UPDATE: the second read waits for the first commit, and
//     the count is 7;
//   - one atomic upsert: the second waits for the first, and counts on top;
//   - the assignment order inside MySQL's ON DUPLICATE KEY UPDATE: each
//     assignment sees the ones before it, so resetting reset_at before
//     computing count carries an expired window's count into the new one;
//     PostgreSQL reads the old row in every SET expression;
//   - the lock row: held as an open transaction, it is freed when its
//     holder dies; committed without an expiry, it blocks every later
//     caller until someone deletes it. The server's own named lock
//     (GET_LOCK, pg_advisory_xact_lock) is freed with its session.
//
// The stores themselves are packages mysqlstore and postgresstore.
package databaselock
