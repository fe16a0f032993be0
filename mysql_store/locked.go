package mysqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/sql_store"
)

// server is what a Store learns of its server once: whether it runs a
// locked hit in two round trips.
type server struct {
	known, blocks atomic.Bool
}

// learn records the server's VERSION().
func (sv *server) learn(version string) {
	sv.blocks.Store(returningServer(version))
	sv.known.Store(true)
}

// twoTrips reports whether the server takes a locked hit in two round
// trips, asking it on conn the first time.
func (sv *server) twoTrips(ctx context.Context, conn *sql.Conn) (bool, error) {
	if !sv.known.Load() {
		var version string
		if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
			return false, err
		}
		sv.learn(version)
	}
	return sv.blocks.Load(), nil
}

// returningServer reports whether version, a VERSION(), is MariaDB's from
// 10.5 on: anonymous blocks (BEGIN NOT ATOMIC … END, from 10.1) and
// INSERT … RETURNING (from 10.5). MySQL has neither.
func returningServer(version string) bool {
	v, _, ok := strings.Cut(version, "-MariaDB")
	if !ok {
		return false
	}
	v = v[strings.LastIndex(v, "-")+1:] // "5.5.5-10.11.2": the old replication prefix
	major, rest, _ := strings.Cut(v, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 10 || ma == 10 && mi >= 5)
}

// takeLocked runs package algorithm's step on the row under its lock: on
// MariaDB in two round trips (lockedInBlocks), on MySQL in five
// (lockedInTx).
func (s *Store) takeLocked(ctx context.Context, h sqlstore.Hit) (ratelab.Decision, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return ratelab.Decision{}, err
	}
	defer conn.Close()
	two, err := s.server.twoTrips(ctx, conn)
	if err != nil {
		return ratelab.Decision{}, err
	}
	lock := s.lockedInTx
	if two {
		lock = s.lockedInBlocks
	}
	stmts, end := s.bound(ctx, conn, s.socketOf(conn))
	d, err := lock(stmts, conn, h)
	return d, end(err)
}

// lockedInBlocks is takeLocked in two round trips: a block that starts
// the transaction and creates or locks the row, returning its state; a
// block that writes the new state and commits. stmts is what the
// statements run under (see bound).
func (s *Store) lockedInBlocks(stmts context.Context, conn *sql.Conn, h sqlstore.Hit) (ratelab.Decision, error) {
	var old []byte
	var inTime bool
	if err := conn.QueryRowContext(stmts, s.q.lockBlock, h.Key, h.Deadline).Scan(&old, &inTime); err != nil {
		return ratelab.Decision{}, rollback(stmts, conn, err)
	}
	res, err := s.step(h, old, inTime)
	if err != nil {
		return ratelab.Decision{}, rollback(stmts, conn, err)
	}
	q, args := "COMMIT", []any(nil)
	if res.State != nil {
		q, args = s.q.updateBlock, []any{res.State, sqlstore.Expiry(res.Decision, h.Now), h.Key}
	}
	if _, err := conn.ExecContext(stmts, q, args...); err != nil {
		return ratelab.Decision{}, rollback(stmts, conn, err)
	}
	return res.Decision, nil
}

// step is package algorithm's step on old, the row's state read under its
// lock while the server's clock was before the deadline (inTime).
func (s *Store) step(h sqlstore.Hit, old []byte, inTime bool) (algorithm.Result, error) {
	if !inTime {
		return algorithm.Result{}, sqlstore.ErrLate
	}
	res, err := algorithm.Take(nil, old, h.Rule, h.Now)
	if err == nil && res.Replaced != nil && len(old) > 0 {
		s.base.Log.Warn("mysqlstore: replaced a corrupt state", "key", h.Key, "cause", res.Replaced)
	}
	return res, err
}

// rollback ends the transaction a failed hit may have left open on conn,
// and returns err. A connection that cannot roll back — the hit's time is
// up, the server is gone — is closed instead, which rolls back too: it
// must not go back to the pool inside a transaction.
func rollback(ctx context.Context, conn *sql.Conn, err error) error {
	if _, rerr := conn.ExecContext(ctx, "ROLLBACK"); rerr != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return err
}

// lockedInTx is takeLocked on MySQL, in a transaction of database/sql:
// BEGIN, the upsert that creates or locks the row, SELECT … FOR UPDATE,
// UPDATE, COMMIT.
func (s *Store) lockedInTx(stmts context.Context, conn *sql.Conn, h sqlstore.Hit) (d ratelab.Decision, err error) {
	tx, err := conn.BeginTx(stmts, nil)
	if err != nil {
		return d, err
	}
	defer func() {
		if err != nil {
			tx.Rollback()
		}
	}()
	// Create the row, or take its lock if it exists: SELECT … FOR UPDATE
	// alone locks no row that does not exist yet.
	if _, err = tx.ExecContext(stmts, s.q.ensure, h.Key); err != nil {
		return d, err
	}
	var old []byte
	var inTime bool
	if err = tx.QueryRowContext(stmts, s.q.lock, h.Deadline, h.Key).Scan(&old, &inTime); err != nil {
		return d, err
	}
	res, err := s.step(h, old, inTime)
	if err != nil {
		return d, err
	}
	if res.State != nil {
		if _, err = tx.ExecContext(stmts, s.q.update, res.State, sqlstore.Expiry(res.Decision, h.Now), h.Key); err != nil {
			return d, err
		}
	}
	return res.Decision, tx.Commit()
}
