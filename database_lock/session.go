package databaselock

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver

	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/poll"
)

const roleSession = "database_lock/session"

// Roles are this package's child roles, for childproc.RunIfChild: a
// session, one connection of its own, that runs the statements its parent
// sends it, one at a time.
func Roles() childproc.Roles { return childproc.Roles{roleSession: sessionChild} }

// sessionChild connects, prints "ready <server session id>", then for each
// line of stdin runs it as one statement and prints "row <columns>" for
// each row it returns, then "done", or "error <message>".
func sessionChild() error {
	d, ok := dialects[os.Getenv("RATELAB_DB_DIALECT")]
	if !ok {
		return fmt.Errorf("RATELAB_DB_DIALECT %q is not a dialect", os.Getenv("RATELAB_DB_DIALECT"))
	}
	db, err := sql.Open(d.driver, os.Getenv("RATELAB_DB_DSN"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	var id int64
	if err := conn.QueryRowContext(ctx, d.sessionID).Scan(&id); err != nil {
		return err
	}
	childproc.Say("ready %d", id)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := say(conn.QueryContext(ctx, in.Text())); err != nil {
			childproc.Say("error %s", oneLine(err.Error()))
			continue
		}
		childproc.Say("done")
	}
	return in.Err()
}

// say says each row of a statement's result, its columns' values
// separated by spaces, and closes rows.
func say(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		out := make([]string, len(vals))
		for i, v := range vals {
			out[i] = v.String
		}
		childproc.Say("row %s", strings.Join(out, " "))
	}
	return rows.Err()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// session is a child process holding one connection to the server: a
// client of its own, as a PHP process of the original would be.
type session struct {
	name string
	p    *childproc.Proc
	id   int64 // the server's id of its connection
	d    *dialect
}

func startSession(d *dialect, dsn, name string) (*session, error) {
	p, err := childproc.Start(name, roleSession, "RATELAB_DB_DIALECT="+d.key, "RATELAB_DB_DSN="+dsn)
	if err != nil {
		return nil, err
	}
	line, err := p.Expect("ready ")
	if err != nil {
		p.Kill()
		return nil, err
	}
	s := &session{name: name, p: p, d: d}
	if _, err := fmt.Sscan(line, &s.id); err != nil {
		p.Kill()
		return nil, fmt.Errorf("%s: bad ready line %q", name, line)
	}
	return s, nil
}

// send sends one statement without waiting for its result.
func (s *session) send(stmt string) error { return s.p.Send(oneLine(stmt)) }

// result waits for the result of the statement sent last: its rows (each
// a line of space-separated columns), or the server's error as a value.
func (s *session) result() (rows []string, stmtErr string, err error) {
	for {
		line, err := s.p.Expect("")
		if err != nil {
			return nil, "", err
		}
		switch {
		case line == "done":
			return rows, "", nil
		case strings.HasPrefix(line, "row"):
			rows = append(rows, strings.TrimSpace(strings.TrimPrefix(line, "row")))
		case strings.HasPrefix(line, "error "):
			return rows, strings.TrimPrefix(line, "error "), nil
		default:
			return nil, "", fmt.Errorf("%s printed %q", s.name, line)
		}
	}
}

// answer waits for the result of the statement sent last, which must
// succeed, and returns its rows.
func (s *session) answer() ([]string, error) {
	rows, stmtErr, err := s.result()
	if err == nil && stmtErr != "" {
		err = fmt.Errorf("%s: %s", s.name, stmtErr)
	}
	return rows, err
}

// The steps of a choreography: each runs when the one before it is done.

// steps runs each step in turn and stops at the first error.
func steps(fns ...func() error) error {
	for _, f := range fns {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// run is the step that runs stmt, which must succeed.
func (s *session) run(stmt string) func() error {
	return func() error {
		if err := s.send(stmt); err != nil {
			return err
		}
		_, err := s.answer()
		return err
	}
}

// read is the step that runs stmt, which must return one row of one
// column, into *into.
func (s *session) read(stmt string, into *string) func() error {
	return func() error { return steps(s.start(stmt), s.value(into)) }
}

// value is the step that waits for the statement started last, which
// must return one row of one column, into *into.
func (s *session) value(into *string) func() error {
	return func() error {
		rows, err := s.answer()
		if err == nil && len(rows) != 1 {
			err = fmt.Errorf("%s: %d rows, want 1", s.name, len(rows))
		}
		if err == nil {
			*into = rows[0]
		}
		return err
	}
}

// start is the step that sends stmt and does not wait for it: a statement
// that is to block.
func (s *session) start(stmt string) func() error { return func() error { return s.send(stmt) } }

// outcome is the step that waits for the statement started last and
// keeps the server's error, if any, in *stmtErr: a refusal is a result.
func (s *session) outcome(stmtErr *string) func() error {
	return func() (err error) {
		_, *stmtErr, err = s.result()
		return err
	}
}

// close ends the session: stdin closed, the child exits, its connection
// closes.
func (s *session) close() { s.p.Close() }

// kill ends the child with SIGKILL in the middle of whatever it holds:
// only the server's noticing the dropped connection can clean up after it.
func (s *session) kill() { s.p.Kill() }

// waitBlocked returns once the server reports that s waits for a lock —
// the evidence that its statement is held, not merely slow — and fails
// after childproc.Timeout.
func waitBlocked(ctx context.Context, admin *sql.DB, s *session) error {
	args := make([]any, s.d.waitingArgs) // every placeholder is the session's id
	for i := range args {
		args[i] = s.id
	}
	// No faster than every 0.1 s: InnoDB refreshes the cache behind
	// INNODB_TRX only when it was not read for that long.
	err := poll.Until(childproc.Timeout, 120*time.Millisecond, func() error {
		var n int
		if err := admin.QueryRowContext(ctx, s.d.waiting, args...).Scan(&n); err != nil {
			return poll.Stop(err)
		}
		if n == 0 {
			return fmt.Errorf("%s is not waiting for a lock", s.name)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w; stderr: %s", err, s.p.Stderr())
	}
	return nil
}
