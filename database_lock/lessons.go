package databaselock

import (
	"context"
	"database/sql"
	"fmt"

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
	settings, err := l.snapshotSettings()
	if err != nil {
		return nil, fmt.Errorf("databaselock: %s: %w", d.name, err)
	}
	type lesson struct {
		sessions int // A, B, C: child processes, each with a connection
		run      func(ss []*session) (Lesson, error)
	}
	var lessons []lesson
	for _, setting := range settings {
		lessons = append(lessons, lesson{2, l.readThenWrite(setting)})
	}
	lessons = append(lessons, []lesson{
		{2, l.selectForUpdate}, {2, l.oneStatement},
		{0, l.orderResetFirst}, {0, l.orderCountFirst},
		{2, l.lockRowInTransaction}, {3, l.lockRowCommitted}, {2, l.ownLock},
	}...)
	var out []Lesson
	for i, lesson := range lessons {
		row, err := l.withSessions(lesson.sessions, lesson.run)
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
	// snapshotDefault is the server's default innodb_snapshot_isolation,
	// "" where it has no such setting.
	snapshotDefault string
}

// withSessions starts n child sessions, A, B, …, runs lesson with them and
// ends them.
func (l *lab) withSessions(n int, lesson func(ss []*session) (Lesson, error)) (Lesson, error) {
	var ss []*session
	defer func() {
		for _, s := range ss {
			s.close()
		}
	}()
	for _, name := range []string{"A", "B", "C"}[:n] {
		s, err := startSession(l.d, l.dsn, name)
		if err != nil {
			return Lesson{}, err
		}
		ss = append(ss, s)
	}
	return lesson(ss)
}

// waits is the step that returns once the server reports s waiting for a
// lock.
func (l *lab) waits(s *session) func() error {
	return func() error { return waitBlocked(l.ctx, l.admin, s) }
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

// startAt5 is the step that makes row k hold count 5.
func (l *lab) startAt5(k string) func() error {
	return func() error {
		return l.exec("DELETE FROM lesson_hits WHERE k = '"+k+"'", "INSERT INTO lesson_hits (k, count, reset_at) VALUES ('"+k+"', 5, 0)")
	}
}

// plusOne is the step in which s writes the count it read, plus one:
// the client's computation, sent back as a constant.
func plusOne(s *session, k string, seen *string) func() error {
	return func() error { return s.run("UPDATE lesson_hits SET count = " + *seen + " + 1 WHERE k = '" + k + "'")() }
}

func lost(final int64) string { return fmt.Sprintf("%d of 2 hits lost", 5+2-final) }

// selectForUpdate is readThenWrite with a locking read: B's read waits
// until A has committed, then reads A's write.
func (l *lab) selectForUpdate(ss []*session) (Lesson, error) {
	a, b := ss[0], ss[1]
	read := "SELECT count FROM lesson_hits WHERE k = 'fu' FOR UPDATE"
	var seenA, seenB string
	err := steps(
		l.startAt5("fu"),
		a.run("BEGIN"), a.read(read, &seenA),
		b.run("BEGIN"), b.start(read), l.waits(b), // B's read waits for A's lock
		plusOne(a, "fu", &seenA), a.run("COMMIT"),
		b.value(&seenB), // B's read returns now, with A's write
		plusOne(b, "fu", &seenB), b.run("COMMIT"),
	)
	if err != nil {
		return Lesson{}, err
	}
	final, err := l.count("fu")
	return Lesson{Case: "SELECT … FOR UPDATE", Expected: "0 of 2 hits lost", Observed: lost(final),
		Detail: fmt.Sprintf("B's read waited for A's commit, then read %s", seenB)}, err
}

// oneStatement: A's upsert holds the row in an open transaction; B's
// upsert, on its own, waits for it and then counts on top of A's.
func (l *lab) oneStatement(ss []*session) (Lesson, error) {
	a, b := ss[0], ss[1]
	err := steps(
		l.startAt5("k"),
		a.run("BEGIN"), a.run(l.d.upsert),
		b.start(l.d.upsert), l.waits(b),
		a.run("COMMIT"),
		func() error { _, err := b.answer(); return err },
	)
	if err != nil {
		return Lesson{}, err
	}
	final, err := l.count("k")
	return Lesson{Case: "one atomic upsert", Expected: "0 of 2 hits lost", Observed: lost(final),
		Detail: "B's upsert waited for A's commit"}, err
}

// orderResetFirst and orderCountFirst hit an expired window (count 6,
// reset_at 100) at 200 with one upsert, assigning reset_at first, then
// count first.
func (l *lab) orderResetFirst([]*session) (Lesson, error) {
	want := "count 1: a new window"
	if l.d.leftToRight {
		want = "count 7: the old window's 6 carried over"
	}
	return l.order("reset_at assigned before count", l.d.resetFirst, want)
}

func (l *lab) orderCountFirst([]*session) (Lesson, error) {
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
