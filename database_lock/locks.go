package databaselock

import "fmt"

// The second article's database lock is a row inserted into a table of
// locks: whoever inserts the name holds the lock. Where that row lives
// decides what happens when its holder dies.

// !+lockrow

// lockRowInTransaction is the article's lock: A upserts the lock row and
// keeps its transaction open as the lock; B's upsert of the same name
// waits. A is killed: the server sees the connection drop, rolls A's
// transaction back, and B's upsert goes through.
func (l *lab) lockRowInTransaction() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b := ss[0], ss[1]
	if err := l.exec("DELETE FROM lesson_locks"); err != nil {
		return Lesson{}, err
	}
	var stmtErr string
	for _, step := range []func() error{
		func() error { _, err := a.do("BEGIN"); return err },
		func() error { _, err := a.do(l.d.articleLock); return err },
		func() error { return b.send(l.d.articleLock) },
		func() error { return waitBlocked(l.ctx, l.admin, b) }, // B waits: A holds the lock
		func() error { a.kill(); return nil },                  // A dies holding it
		func() (err error) { _, stmtErr, err = b.result(); return err },
	} {
		if err := step(); err != nil {
			return Lesson{}, err
		}
	}
	got := "freed: B took the lock when A's connection dropped"
	if stmtErr != "" {
		got = "B refused: " + stmtErr
	}
	return Lesson{Case: "lock row in an open transaction, holder killed", Expected: "freed: B took the lock when A's connection dropped",
		Observed: got}, nil
}

// lockRowCommitted: A inserts the lock row and commits it, meaning to
// delete it when done, and is killed first. Nothing ever deletes it: B is
// refused, and so is C, and so is every caller after them. (Committed,
// the article's upsert would exclude nobody: every caller's upsert would
// succeed. Only a plain INSERT makes a committed row a lock.)
func (l *lab) lockRowCommitted() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B", "C")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b, c := ss[0], ss[1], ss[2]
	if err := l.exec("DELETE FROM lesson_locks"); err != nil {
		return Lesson{}, err
	}
	if _, err := a.do("INSERT INTO lesson_locks (name) VALUES ('demo')"); err != nil {
		return Lesson{}, err
	}
	a.kill()
	refused := 0
	for _, s := range []*session{b, c} {
		if err := s.send("INSERT INTO lesson_locks (name) VALUES ('demo')"); err != nil {
			return Lesson{}, err
		}
		_, stmtErr, err := s.result()
		if err != nil {
			return Lesson{}, err
		}
		if stmtErr != "" {
			refused++
		}
	}
	return Lesson{Case: "lock row committed, holder killed", Expected: "stuck: B and C refused, the row outlives A",
		Observed: map[int]string{0: "freed: B and C took it", 1: "B or C refused", 2: "stuck: B and C refused, the row outlives A"}[refused]}, nil
}

// !-lockrow

// ownLock: the database's own lock (GET_LOCK, an advisory lock) is held
// by a session and released when its connection ends, with no row to
// leave behind.
func (l *lab) ownLock() (Lesson, error) {
	ss, stop, err := l.sessions("A", "B")
	if err != nil {
		return Lesson{}, err
	}
	defer stop()
	a, b := ss[0], ss[1]
	for _, q := range l.d.ownLock {
		if _, err := a.do(q); err != nil {
			return Lesson{}, err
		}
	}
	last := l.d.ownLock[len(l.d.ownLock)-1]
	if err := b.send(last); err != nil {
		return Lesson{}, err
	}
	if err := waitBlocked(l.ctx, l.admin, b); err != nil {
		return Lesson{}, err
	}
	a.kill()
	rows, stmtErr, err := b.result()
	if err != nil {
		return Lesson{}, err
	}
	got := "freed: B took the lock when A's connection dropped"
	if stmtErr != "" || len(rows) != 1 || (rows[0] != "1" && rows[0] != "") {
		got = fmt.Sprintf("B did not get it: %q %v", stmtErr, rows)
	}
	return Lesson{Case: l.d.ownLockName + ", holder killed", Expected: "freed: B took the lock when A's connection dropped", Observed: got}, nil
}
