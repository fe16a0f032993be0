package databaselock

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/ratelab/ratelab/internal/claim"
)

// Lesson is one demonstrated mistake or its fix: what was claimed and
// what the server showed.
type Lesson = claim.Claim

// Lessons runs every lesson on the server of dialect key ("mariadb" or
// "postgres") at dsn, each client a child process with a connection of
// its own, and returns one row per lesson. It creates the tables
// lesson_hits and lesson_locks, dropping any that exist.
func Lessons(ctx context.Context, key, dsn string) ([]Lesson, error) {
	d, ok := dialects[key]
	if !ok {
		return nil, fmt.Errorf("databaselock: unknown server %q: use mariadb or postgres", key)
	}
	admin, err := sql.Open(d.driver, dsn)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	for _, q := range d.tables {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("databaselock: %s: %w", d.name, err)
		}
	}
	l := &lab{ctx: ctx, d: d, dsn: dsn, admin: admin}
	var out []Lesson
	for i, lesson := range []func() (Lesson, error){l.readThenWrite, l.selectForUpdate, l.oneStatement,
		l.orderResetFirst, l.orderCountFirst, l.lockRowInTransaction, l.lockRowCommitted, l.ownLock} {
		row, err := lesson()
		if err != nil {
			return out, fmt.Errorf("databaselock: %s, lesson %d: %w", d.name, i+1, err)
		}
		row.Case = d.name + ": " + row.Case
		out = append(out, row)
	}
	return out, nil
}

// lab holds what every lesson of one server needs.
type lab struct {
	ctx   context.Context
	d     *dialect
	dsn   string
	admin *sql.DB
}

// sessions starts one child session per name; stop ends them all.
func (l *lab) sessions(names ...string) (ss []*session, stop func(), err error) {
	stop = func() {
		for _, s := range ss {
			s.close()
		}
	}
	for _, n := range names {
		s, err := startSession(l.d, l.dsn, n)
		if err != nil {
			stop()
			return nil, nil, err
		}
		ss = append(ss, s)
	}
	return ss, stop, nil
}

// exec runs statements on the admin connection.
func (l *lab) exec(stmts ...string) error {
	for _, q := range stmts {
		if _, err := l.admin.ExecContext(l.ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// count reads a row's count on the admin connection.
func (l *lab) count(k string) (n int64, err error) {
	err = l.admin.QueryRowContext(l.ctx, "SELECT count FROM lesson_hits WHERE k = '"+k+"'").Scan(&n)
	return n, err
}

// startAt5 makes row k hold count 5.
func (l *lab) startAt5(k string) error {
	return l.exec("DELETE FROM lesson_hits WHERE k = '"+k+"'", "INSERT INTO lesson_hits (k, count, reset_at) VALUES ('"+k+"', 5, 0)")
}

func lost(final int64) string { return fmt.Sprintf("%d of 2 hits lost", 5+2-final) }

// !+readthenwrite

// readThenWrite: A reads 5, B reads 5, B writes 6 and commits, A writes 6
// and commits. Each is a transaction at the server's default isolation,
// and neither notices the other.
func (l *lab) readThenWrite() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b := ss[0], ss[1]
	if err := l.startAt5("rw"); err != nil {
		return Lesson{}, err
	}
	iso, err := a.one(l.d.isolation)
	if err != nil {
		return Lesson{}, err
	}
	read := "SELECT count FROM lesson_hits WHERE k = 'rw'"
	write := func(s *session, seen string) error {
		_, err := s.do("UPDATE lesson_hits SET count = " + seen + " + 1 WHERE k = 'rw'")
		return err
	}
	var seenA, seenB string
	for _, step := range []func() error{
		func() error { _, err := a.do("BEGIN"); return err },
		func() (err error) { seenA, err = a.one(read); return err },
		func() error { _, err := b.do("BEGIN"); return err },
		func() (err error) { seenB, err = b.one(read); return err },
		func() error { return write(b, seenB) },
		func() error { _, err := b.do("COMMIT"); return err },
		func() error { return write(a, seenA) },
		func() error { _, err := a.do("COMMIT"); return err },
	} {
		if err := step(); err != nil {
			return Lesson{}, err
		}
	}
	final, err := l.count("rw")
	return Lesson{Case: "read, then write: two statements", Expected: "1 of 2 hits lost", Observed: lost(final),
		Detail: fmt.Sprintf("%s; A and B both read %s and wrote %d", iso, seenA, final)}, err
}

// !-readthenwrite

// selectForUpdate is readThenWrite with a locking read: B's read waits
// until A has committed, then reads A's write.
func (l *lab) selectForUpdate() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b := ss[0], ss[1]
	if err := l.startAt5("fu"); err != nil {
		return Lesson{}, err
	}
	read := "SELECT count FROM lesson_hits WHERE k = 'fu' FOR UPDATE"
	var seenA string
	var rowsB []string
	for _, step := range []func() error{
		func() error { _, err := a.do("BEGIN"); return err },
		func() (err error) { seenA, err = a.one(read); return err },
		func() error { _, err := b.do("BEGIN"); return err },
		func() error { return b.send(read) },
		func() error { return waitBlocked(l.ctx, l.admin, b) }, // B waits for A's lock
		func() error {
			_, err := a.do("UPDATE lesson_hits SET count = " + seenA + " + 1 WHERE k = 'fu'")
			return err
		},
		func() error { _, err := a.do("COMMIT"); return err },
		func() error { return expectRows(b, &rowsB, 1) },
		func() error {
			_, err := b.do("UPDATE lesson_hits SET count = " + rowsB[0] + " + 1 WHERE k = 'fu'")
			return err
		},
		func() error { _, err := b.do("COMMIT"); return err },
	} {
		if err := step(); err != nil {
			return Lesson{}, err
		}
	}
	final, err := l.count("fu")
	return Lesson{Case: "SELECT … FOR UPDATE", Expected: "0 of 2 hits lost", Observed: lost(final),
		Detail: fmt.Sprintf("B's read waited for A's commit, then read %s", rowsB[0])}, err
}

// expectRows waits for the result of s's statement sent last, which must
// succeed with n rows, into rows.
func expectRows(s *session, rows *[]string, n int) error {
	got, stmtErr, err := s.result()
	switch {
	case err != nil:
		return err
	case stmtErr != "":
		return fmt.Errorf("%s: %s", s.name, stmtErr)
	case len(got) != n:
		return fmt.Errorf("%s: %d rows, want %d", s.name, len(got), n)
	}
	*rows = got
	return nil
}

// oneStatement: A's upsert holds the row in an open transaction; B's
// upsert, on its own, waits for it and then counts on top of A's.
func (l *lab) oneStatement() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b := ss[0], ss[1]
	if err := l.startAt5("k"); err != nil {
		return Lesson{}, err
	}
	var rowsB []string
	want := 0
	if strings.Contains(l.d.upsert, "RETURNING") {
		want = 1
	}
	for _, step := range []func() error{
		func() error { _, err := a.do("BEGIN"); return err },
		func() error { _, err := a.do(l.d.upsert); return err },
		func() error { return b.send(l.d.upsert) },
		func() error { return waitBlocked(l.ctx, l.admin, b) },
		func() error { _, err := a.do("COMMIT"); return err },
		func() error { return expectRows(b, &rowsB, want) },
	} {
		if err := step(); err != nil {
			return Lesson{}, err
		}
	}
	final, err := l.count("k")
	return Lesson{Case: "one atomic upsert", Expected: "0 of 2 hits lost", Observed: lost(final),
		Detail: "B's upsert waited for A's commit"}, err
}

// orderResetFirst and orderCountFirst hit an expired window (count 6,
// reset_at 100) at 200 with one upsert, assigning reset_at first, then
// count first.
func (l *lab) orderResetFirst() (Lesson, error) {
	want := "count 7: the old window's 6 carried over"
	if l.d == postgres {
		want = "count 1: a new window"
	}
	return l.order("reset_at assigned before count", l.d.resetFirst, want)
}

func (l *lab) orderCountFirst() (Lesson, error) {
	return l.order("count assigned before reset_at", l.d.countFirst, "count 1: a new window")
}

func (l *lab) order(name, stmt, want string) (Lesson, error) {
	if err := l.exec("DELETE FROM lesson_hits WHERE k = 'order'",
		"INSERT INTO lesson_hits (k, count, reset_at) VALUES ('order', 6, 100)", stmt); err != nil {
		return Lesson{}, err
	}
	n, err := l.count("order")
	got := fmt.Sprintf("count %d: the old window's 6 carried over", n)
	if n == 1 {
		got = "count 1: a new window"
	}
	return Lesson{Case: name, Expected: want, Observed: got}, err
}
