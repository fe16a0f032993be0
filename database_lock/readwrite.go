package databaselock

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The read-then-write lesson's claim depends on the server. MySQL and
// MariaDB's REPEATABLE READ used not to look for a write-write conflict:
// the second writer overwrites the first. MariaDB 10.6.18, 10.11.8, 11.4.2
// (and the other series of their day) added innodb_snapshot_isolation,
// off, and 11.6.2 turned it on by default (MDEV-35124): the second
// writer's UPDATE is refused with ERROR 1020, its transaction rolled back,
// and nothing is lost if it retries.

// refusedRetried is the claim with snapshot isolation on.
const refusedRetried = "ERROR 1020 for A, retried: 0 of 2 lost"

// snapshotSettings are the values of the server's snapshot-isolation
// setting the lesson runs under, each in a row of its own: OFF and ON
// where the server has the setting, and "" — the server as it is — where
// it has none (PostgreSQL, MySQL, older MariaDB).
func (l *lab) snapshotSettings() ([]string, error) {
	if l.d.snapshotIsolation == "" {
		return []string{""}, nil
	}
	var name string
	err := l.admin.QueryRowContext(l.ctx, "SHOW VARIABLES LIKE '"+l.d.snapshotIsolation+"'").Scan(&name, &l.snapshotDefault)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return []string{""}, nil
	case err != nil:
		return nil, err
	}
	return []string{"OFF", "ON"}, nil
}

// !+readthenwrite

// readThenWrite: A reads 5, B reads 5, B writes 6 and commits, A writes 6
// and commits. Each is a transaction at the server's default isolation,
// with the server's snapshot isolation set to setting first unless it is
// "". Without snapshot isolation neither notices the other: one hit is
// lost. With it, A's UPDATE is refused, because the row changed since A's
// snapshot; A's transaction is rolled back, and A starts again.
func (l *lab) readThenWrite(setting string) func(ss []*session) (Lesson, error) {
	return func(ss []*session) (Lesson, error) {
		a, b := ss[0], ss[1]
		read := "SELECT count FROM lesson_hits WHERE k = 'rw'"
		var iso, snapshot, seenA, seenB, refused string
		err := steps(
			l.startAt5("rw"), l.setSnapshot(setting, &snapshot, a, b), a.read(l.d.isolation, &iso),
			a.run("BEGIN"), a.read(read, &seenA),
			b.run("BEGIN"), b.read(read, &seenB),
			plusOne(b, "rw", &seenB), b.run("COMMIT"),
			tryPlusOne(a, "rw", &seenA, &refused), // refused under snapshot isolation
			func() error {
				if refused == "" {
					return a.run("COMMIT")()
				}
				// The server has rolled A's transaction back: A starts again.
				return steps(a.run("BEGIN"), a.read(read, &seenA), plusOne(a, "rw", &seenA), a.run("COMMIT"))
			},
		)
		if err != nil {
			return Lesson{}, err
		}
		final, err := l.count("rw")
		return l.readThenWriteRow(setting, snapshot == "ON", iso, refused, seenA, final), err
	}
}

// !-readthenwrite

// setSnapshot is the step that sets the snapshot-isolation setting to
// setting in each session, unless it is "", and reads it back from the
// first into *got.
func (l *lab) setSnapshot(setting string, got *string, ss ...*session) func() error {
	return func() error {
		if setting == "" {
			return nil
		}
		for _, s := range ss {
			if err := s.run("SET SESSION " + l.d.snapshotIsolation + " = " + setting)(); err != nil {
				return err
			}
		}
		return ss[0].read("SELECT IF(@@SESSION."+l.d.snapshotIsolation+", 'ON', 'OFF')", got)()
	}
}

// tryPlusOne is plusOne, keeping the server's refusal, if any, in
// *refused.
func tryPlusOne(s *session, k string, seen, refused *string) func() error {
	return func() error {
		return steps(s.start("UPDATE lesson_hits SET count = "+*seen+" + 1 WHERE k = '"+k+"'"), s.outcome(refused))
	}
}

// readThenWriteRow is the lesson's row: what the session's setting,
// snapshot on or not, makes the server do, and what it did; seenA is the
// count A read last.
func (l *lab) readThenWriteRow(setting string, snapshot bool, iso, refused, seenA string, final int64) Lesson {
	row := Lesson{Case: "read, then write: two statements", Expected: "1 of 2 hits lost"}
	if snapshot {
		row.Expected = refusedRetried
	}
	switch {
	case refused == "":
		row.Observed = lost(final)
		row.Detail = fmt.Sprintf("%s; both read %s and wrote %d", iso, seenA, final)
	case strings.Contains(refused, "1020") && final == 7:
		row.Observed = refusedRetried
		row.Detail = fmt.Sprintf("A read %s again and wrote %d", seenA, final)
	default:
		row.Observed = fmt.Sprintf("A refused (%s): %s", refused, lost(final))
	}
	if setting != "" {
		row.Case = "read, then write, " + l.d.snapshotIsolation + "=" + setting
		row.Detail += "; server default " + l.snapshotDefault
	}
	return row
}
