package databaselock

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/linearizability"
)

// The lessons' mistakes as stores whose hits can be recorded (package
// linearizability): a fixed window in lesson_hits, counted the wrong way.
const (
	// ReadThenWrite reads the row, decides in Go, and writes back the
	// count it computed: two statements, each its own transaction.
	ReadThenWrite = "read-then-write"
	// ResetFirst is one upsert that assigns reset_at before count, so
	// that on MariaDB (left to right) count sees the new reset_at and
	// carries the old window's count over.
	ResetFirst = "reset-first"
)

// historyRule is the rule of the recorded lessons: 3 hits a minute.
var historyRule = ratelab.Rule{Name: "lesson", Limit: 3, Window: time.Minute}.Normalized()

// historyStatements are each dialect's statements of the two mistakes:
// read, write back, and the upsert assigning reset_at first. Arguments:
// the key; for write, count and reset_at; for the upsert, the fresh
// reset_at and now.
var historyStatements = map[string][3]string{
	"mariadb": {
		`SELECT count, reset_at FROM lesson_hits WHERE k = ?`,
		`INSERT INTO lesson_hits (k, count, reset_at) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE count = VALUES(count), reset_at = VALUES(reset_at)`,
		`INSERT INTO lesson_hits (k, count, reset_at) VALUES (?, 1, ?) ON DUPLICATE KEY UPDATE
  reset_at = IF(reset_at <= ?, VALUES(reset_at), reset_at), count = IF(reset_at <= ?, 1, count + 1)`,
	},
	"postgres": {
		`SELECT count, reset_at FROM lesson_hits WHERE k = $1`,
		`INSERT INTO lesson_hits (k, count, reset_at) VALUES ($1, $2, $3) ON CONFLICT (k) DO UPDATE SET count = EXCLUDED.count, reset_at = EXCLUDED.reset_at`,
		`INSERT INTO lesson_hits AS h (k, count, reset_at) VALUES ($1, 1, $2) ON CONFLICT (k) DO UPDATE SET
  reset_at = CASE WHEN h.reset_at <= $3 THEN EXCLUDED.reset_at ELSE h.reset_at END,
  count = CASE WHEN h.reset_at <= $4 THEN 1 ELSE h.count + 1 END`,
	},
}

// lessonStore is a store of one mistake on one connection.
type lessonStore struct {
	conn      *sql.Conn
	stmts     [3]string
	mistake   string
	afterRead func() // ReadThenWrite: runs between the read and the write
}

// TakeAt takes one hit of key at now the mistaken way.
func (s *lessonStore) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	if s.mistake == ResetFirst {
		t := now.Unix()
		if _, err := s.conn.ExecContext(ctx, s.stmts[2], key, t+int64(r.Window/time.Second), t, t); err != nil {
			return ratelab.Decision{}, err
		}
	}
	var st algorithm.Fixed
	err := s.conn.QueryRowContext(ctx, s.stmts[0], key).Scan(&st.Count, &st.ResetAt)
	if err != nil && err != sql.ErrNoRows {
		return ratelab.Decision{}, err
	}
	if s.mistake == ResetFirst {
		return algorithm.FixedDecision(r, st.Count, st.ResetAt, now), nil
	}
	if s.afterRead != nil {
		s.afterRead()
	}
	next, d, err := st.Take(r, now)
	if err != nil {
		return ratelab.Decision{}, err
	}
	_, err = s.conn.ExecContext(ctx, s.stmts[1], key, next.Count, next.ResetAt)
	return d, err
}

// RecordMistake runs the mistake on the server of dialect key at dsn,
// every hit recorded in a directory it makes in tmp and removes, and
// returns the history. ReadThenWrite: two clients, each on a connection
// of its own, make 3 hits each, and their first hits both read before
// either writes, so every run loses one. ResetFirst: one client fills a
// window, then hits once more after it ended.
func RecordMistake(ctx context.Context, key, dsn, mistake, tmp string) (linearizability.History, error) {
	d, ok := dialects[key]
	if !ok || (mistake != ReadThenWrite && mistake != ResetFirst) {
		return linearizability.History{}, fmt.Errorf("databaselock: no mistake %q on %q", mistake, key)
	}
	db, err := sql.Open(d.driver, dsn)
	if err != nil {
		return linearizability.History{}, err
	}
	defer db.Close()
	for _, q := range d.tables {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return linearizability.History{}, fmt.Errorf("databaselock: %s: %w", d.name, err)
		}
	}
	return linearizability.RecordHere(tmp, func(rec *linearizability.Recorder) error {
		run := oneClientAcrossAWindow
		if mistake == ReadThenWrite {
			run = twoClients
		}
		if err := run(ctx, db, historyStatements[key], rec); err != nil {
			return fmt.Errorf("databaselock: %s, %s: %w", d.name, mistake, err)
		}
		return nil
	})
}

// twoClients makes 3 hits from each of two clients on one key, at one
// instant; the first hit of each waits after its read until the other has
// read too.
func twoClients(ctx context.Context, db *sql.DB, stmts [3]string, rec *linearizability.Recorder) error {
	t0 := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	var read sync.WaitGroup
	read.Add(2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			conn, err := db.Conn(ctx)
			if err != nil {
				read.Done()
				errs <- err
				return
			}
			defer conn.Close()
			var once sync.Once
			s := &lessonStore{conn: conn, stmts: stmts, mistake: ReadThenWrite,
				afterRead: func() { once.Do(func() { read.Done(); read.Wait() }) }}
			errs <- hitN(ctx, rec.Store(s), 3, t0)
		}()
	}
	return joinErrs(errs, 2)
}

// oneClientAcrossAWindow fills a window (3 hits at t0), then hits once
// the window is over.
func oneClientAcrossAWindow(ctx context.Context, db *sql.DB, stmts [3]string, rec *linearizability.Recorder) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	s := rec.Store(&lessonStore{conn: conn, stmts: stmts, mistake: ResetFirst})
	t0 := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	if err := hitN(ctx, s, 3, t0); err != nil {
		return err
	}
	return hitN(ctx, s, 1, t0.Add(historyRule.Window+time.Second))
}

// hitN makes n hits on s at now.
func hitN(ctx context.Context, s ratelab.Store, n int, now time.Time) error {
	for range n {
		if _, err := s.TakeAt(ctx, historyRule, "k", now); err != nil {
			return err
		}
	}
	return nil
}

func joinErrs(errs chan error, n int) error {
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
