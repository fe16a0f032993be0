package databaselock

import "fmt"

// The second article's database lock is a row inserted into a table of
// locks: whoever inserts the name holds the lock. Where that row lives
// decides what happens when its holder dies.

const freed = "freed: B took the lock when A's connection dropped"

// !+lockrow

// lockRowInTransaction is the article's lock: A upserts the lock row and
// keeps its transaction open as the lock; B's upsert of the same name
// waits. A is killed: the server sees the connection drop, rolls A's
// transaction back, and B's upsert goes through.
func (l *lab) lockRowInTransaction(ss []*session) (Lesson, error) {
	a, b := ss[0], ss[1]
	var refused string
	err := steps(
		func() error { return l.exec("DELETE FROM lesson_locks") },
		a.run("BEGIN"), a.run(l.d.articleLock),
		b.start(l.d.articleLock), l.waits(b), // B waits: A holds the lock
		func() error { a.kill(); return nil }, // A dies holding it
		b.outcome(&refused),
	)
	got := freed
	if refused != "" {
		got = "B refused: " + refused
	}
	return Lesson{Case: "lock row in an open transaction, holder killed", Expected: freed, Observed: got}, err
}

// lockRowCommitted: A inserts the lock row and commits it, meaning to
// delete it when done, and is killed first. Nothing ever deletes it: B is
// refused, and so is C, and so is every caller after them. (Committed,
// the article's upsert would exclude nobody: every caller's upsert would
// succeed. Only a plain INSERT makes a committed row a lock.)
func (l *lab) lockRowCommitted(ss []*session) (Lesson, error) {
	a, b, c := ss[0], ss[1], ss[2]
	insert := "INSERT INTO lesson_locks (name) VALUES ('demo')"
	var refusedB, refusedC string
	err := steps(
		func() error { return l.exec("DELETE FROM lesson_locks") },
		a.run(insert),
		func() error { a.kill(); return nil }, // before its DELETE
		b.start(insert), b.outcome(&refusedB),
		c.start(insert), c.outcome(&refusedC),
	)
	got := "stuck: B and C refused, the row outlives A"
	if refusedB == "" || refusedC == "" {
		got = fmt.Sprintf("B refused: %t, C refused: %t", refusedB != "", refusedC != "")
	}
	return Lesson{Case: "lock row committed, holder killed", Expected: "stuck: B and C refused, the row outlives A", Observed: got}, err
}

// !-lockrow

// ownLock: the database's own lock (GET_LOCK, an advisory lock) is held
// by a session and released when its connection ends, with no row to
// leave behind.
func (l *lab) ownLock(ss []*session) (Lesson, error) {
	a, b := ss[0], ss[1]
	var fns []func() error
	for _, q := range l.d.ownLock {
		fns = append(fns, a.run(q))
	}
	var rows []string
	var refused string
	err := steps(append(fns,
		b.start(l.d.ownLock[len(l.d.ownLock)-1]), l.waits(b),
		func() error { a.kill(); return nil },
		func() (err error) { rows, refused, err = b.result(); return err },
	)...)
	got := freed
	// GET_LOCK answers 1 when it got the lock, 0 when it timed out;
	// pg_advisory_xact_lock answers nothing, or an error.
	if refused != "" || len(rows) != 1 || (rows[0] != "1" && rows[0] != "") {
		got = fmt.Sprintf("B did not get it: %q %v", refused, rows)
	}
	return Lesson{Case: l.d.ownLockName + ", holder killed", Expected: freed, Observed: got}, err
}
