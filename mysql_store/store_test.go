package mysqlstore_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/shortmode"
	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/storetest"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
)

// server is one private MariaDB for the package's tests, started by
// TestMain; nil when MariaDB is not installed (each test then skips).
var server *sqlserver.Server

func TestMain(m *testing.M) { sqlserver.Main(m, sqlserver.StartMariaDB, &server) }

// connect opens dsn for t and returns a constructor of stores on it.
func connect(t testing.TB, dsn string, timeout time.Duration) func(storetest.Options) storetest.DatabaseStore {
	t.Helper()
	db := open(t, dsn, timeout)
	return func(o storetest.Options) storetest.DatabaseStore {
		s, err := mysqlstore.New(db, mysqlstore.Options{Prefix: o.Prefix, Timeout: o.Timeout, Logger: o.Logger})
		require.NoError(t, err)
		return storetest.BehindPolicy(s, o)
	}
}

func open(t testing.TB, dsn string, timeout time.Duration) *sql.DB {
	t.Helper()
	db, err := mysqlstore.OpenDB(dsn, timeout, 0)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func skipWithoutServer(t *testing.T) {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("MariaDB"))
	}
	if server == nil {
		t.Skip("mariadbd not found: install it with " + sqlserver.MariaDBInstallHint)
	}
}

func TestStore(t *testing.T) {
	skipWithoutServer(t)
	storetest.RunDatabase(t, storetest.Database{Pkg: "mysqlstore", Connect: connect, DSN: server.DSN, Addr: server.Addr,
		Unreachable:   "ratelab:x@tcp(127.0.0.1:1)/ratelab",
		WrongPassword: "ratelab:wrong@tcp(" + server.Addr + ")/ratelab",
		MissingDB:     "ratelab:" + sqlserver.Password + "@tcp(" + server.Addr + ")/nosuchdb",
		NoTLS:         "ratelab:" + sqlserver.Password + "@tcp(" + server.Addr + ")/ratelab?tls=true", // the private server offers none
		ReadOnly:      "ratelab:" + sqlserver.Password + "@tcp(" + server.Addr + ")/ratelab?tx_read_only=1",
		At:            func(addr string) string { return "ratelab:" + sqlserver.Password + "@tcp(" + addr + ")/ratelab" },
		Refused:       mysqlstore.ErrRefused, SweepSize: mysqlstore.SweepBatch,
		Hold: func(t testing.TB, dsn, table, k string) func() {
			tx, err := open(t, dsn, 5*time.Second).Begin()
			require.NoError(t, err)
			var got string
			require.NoError(t, tx.QueryRow("SELECT k FROM "+table+" WHERE k = ? FOR UPDATE", k).Scan(&got))
			return func() { tx.Rollback() }
		},
		Exec: func(t testing.TB, dsn, q string) {
			_, err := open(t, dsn, 5*time.Second).Exec(q)
			require.NoError(t, err)
		},
		// Sessions is polled: its pool is closed at once, not at the end
		// of the test, or each poll would keep a connection open.
		Sessions: func(t testing.TB, dsn string) (n int64) {
			db := open(t, dsn, 5*time.Second)
			defer db.Close()
			require.NoError(t, db.QueryRow(
				"SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND USER = 'ratelab'").Scan(&n))
			return n
		},
		Fill: func(t testing.TB, dsn string) func() {
			cfg, err := mysql.ParseDSN(dsn)
			require.NoError(t, err)
			connector, err := mysql.NewConnector(cfg)
			require.NoError(t, err)
			var conns []driver.Conn
			release := func() {
				for _, c := range conns {
					c.Close()
				}
				conns = nil
			}
			t.Cleanup(release)
			for len(conns) < 1000 {
				c, err := connector.Connect(context.Background())
				var me *mysql.MySQLError
				if errors.As(err, &me) && me.Number == 1040 {
					return release
				}
				require.NoError(t, err)
				conns = append(conns, c)
			}
			t.Fatal("the server took 1000 connections")
			return nil
		},
		Pause: func() (func() error, error) { return server.Pause() },
	})
}

// The key reaches the database hashed, and the row is the original's:
// a count and the end of its window.
func TestKeysAreHashed(t *testing.T) {
	skipWithoutServer(t)
	s := connect(t, server.DSN, 5*time.Second)(storetest.Options{Prefix: "hashed_"})
	require.NoError(t, s.CheckServer(context.Background()))
	t.Cleanup(func() { open(t, server.DSN, time.Second).Exec("DROP TABLE hashed_fixed, hashed_state") })
	storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0)
	var k string
	var count, reset int64
	require.NoError(t, open(t, server.DSN, time.Second).QueryRow("SELECT k, count, reset_at FROM hashed_fixed").Scan(&k, &count, &reset))
	assert.Equal(t, storetest.Raw(s).(*mysqlstore.Store).Key(storetest.Original, storetest.Key), k)
	assert.NotContains(t, k, "203.0.113.7")
	assert.Equal(t, []int64{1, storetest.T0.Add(time.Hour).Unix()}, []int64{count, reset})
}

func TestBadOptions(t *testing.T) {
	_, err := mysqlstore.OpenDB("not a dsn", 0, 0)
	assert.Error(t, err)
	db, err := mysqlstore.OpenDB("ratelab:x@tcp(127.0.0.1:1)/ratelab", 0, 0)
	require.NoError(t, err)
	defer db.Close()
	_, err = mysqlstore.New(db, mysqlstore.Options{Prefix: "x; DROP TABLE y"})
	assert.ErrorContains(t, err, "table prefix")
	_, err = mysqlstore.New(nil, mysqlstore.Options{})
	assert.Error(t, err)
}

// The fixed window's statement reads no column another assignment of it
// wrote, so it decides the same whether the server runs the assignments
// left to right (MySQL, MariaDB's default) or all against the old row
// (MariaDB's SIMULTANEOUS_ASSIGNMENT): every store check, under the mode.
// Written the other way, the 31st hit was allowed under the mode.
func TestStoreUnderSimultaneousAssignment(t *testing.T) {
	skipWithoutServer(t)
	cfg, err := mysql.ParseDSN(server.DSN)
	require.NoError(t, err)
	cfg.Params = map[string]string{"sql_mode": "'STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'"}
	stores := connect(t, cfg.FormatDSN(), 5*time.Second)
	var mode string
	require.NoError(t, open(t, cfg.FormatDSN(), 5*time.Second).QueryRow("SELECT @@sql_mode").Scan(&mode))
	require.Contains(t, mode, "SIMULTANEOUS_ASSIGNMENT")
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		o := storetest.Options{Prefix: fmt.Sprintf("simultaneous%d_", prefixes.Add(1)), Timeout: 5 * time.Second}
		require.NoError(t, stores(o).CheckServer(context.Background()))
		return func() ratelab.Store { return stores(o) }
	}, true)
}

var prefixes atomic.Int64

// The finding: InnoDB gave up a row lock wait after 1 s, half the hit's
// 2 s, so a server stopped for a second turned into "Lock wait timeout
// exceeded" and hits let through uncounted. A row held longer than a
// second, but within the timeout, is waited for.
func TestARowHeldPastASecondIsWaitedFor(t *testing.T) {
	skipWithoutServer(t)
	stores := connect(t, server.DSN, 4*time.Second)
	o := storetest.Options{Prefix: fmt.Sprintf("held%d_", prefixes.Add(1)), Timeout: 4 * time.Second, Policy: ratelab.FailClosed}
	s := stores(o)
	require.NoError(t, s.CheckServer(context.Background()))
	storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0) // the row exists
	tx, err := open(t, server.DSN, 5*time.Second).Begin()
	require.NoError(t, err)
	defer tx.Rollback()
	var k string
	require.NoError(t, tx.QueryRow("SELECT k FROM "+o.Prefix+"fixed FOR UPDATE").Scan(&k))
	done := make(chan error, 1)
	go func() {
		_, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
		done <- err
	}()
	// InnoDB refreshes INNODB_TRX only when it has not been read for 0.1 s.
	waited := open(t, server.DSN, 5*time.Second)
	require.NoError(t, poll.Until(10*time.Second, 150*time.Millisecond, func() error {
		var ms int64
		err := waited.QueryRow(`SELECT COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, trx_wait_started, NOW(6))) DIV 1000, 0)
FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`).Scan(&ms)
		if err == nil && ms < 1500 {
			err = fmt.Errorf("waiting %d ms", ms)
		}
		return err
	}))
	require.NoError(t, tx.Rollback())
	assert.NoError(t, <-done, "a row held 1.5 s, within a 4 s timeout, is load")
}

// A fixed-window hit is one UPDATE when the key's row holds a live window
// of the rule, and the upsert after it otherwise; each case sets the row,
// takes one hit at T0 and reads the decision, the row and the round trips.
// A count stopped at the cap changes no row — affected rows 0 — and is
// still the UPDATE's: taken for a missing row, the hit went on to the
// upsert, two round trips.
func TestFixedHotPath(t *testing.T) {
	skipWithoutServer(t)
	p, err := sqlserver.CountTrips(server.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	o := storetest.Options{Prefix: fmt.Sprintf("hot%d_", prefixes.Add(1)), Timeout: 5 * time.Second, Policy: ratelab.FailClosed}
	s := connect(t, strings.Replace(server.DSN, server.Addr, p.Addr, 1), 5*time.Second)(o)
	require.NoError(t, s.CheckServer(context.Background()))
	admin := open(t, server.DSN, 5*time.Second)
	five := storetest.Checked(ratelab.Rule{Name: "five", Limit: 5, Window: time.Hour})
	storetest.Take(t, s, five, "warm", storetest.T0) // a connection, its statement prepared
	t0, fresh := storetest.T0.Unix(), storetest.T0.Add(time.Hour).Unix()
	for _, c := range []struct {
		name      string
		row       []int64 // count, reset_at; nil: none
		allowed   bool
		remaining int64
		conflict  bool
		want      []int64 // the row after the hit
		trips     int64
	}{
		{"a live window", []int64{2, t0 + 1800}, true, 2, false, []int64{3, t0 + 1800}, 1},
		{"the hit past the limit", []int64{5, t0 + 1800}, false, 0, false, []int64{6, t0 + 1800}, 1},
		{"a count stopped at the cap", []int64{6, t0 + 1800}, false, 0, false, []int64{6, t0 + 1800}, 1},
		{"a window over", []int64{6, t0}, true, 4, false, []int64{1, fresh}, 2},
		{"no row", nil, true, 4, false, []int64{1, fresh}, 2},
		{"another rule's window", []int64{3, t0 + 3*3600}, false, 0, true, []int64{3, t0 + 3*3600}, 2},
		{"a negative count", []int64{-3, t0 + 1800}, true, 4, false, []int64{1, t0 + 1800}, 2},
	} {
		k := s.(interface {
			Key(ratelab.Rule, string) string
		}).Key(five, storetest.Key)
		_, err := admin.Exec("DELETE FROM "+o.Prefix+"fixed WHERE k = ?", k)
		require.NoError(t, err)
		if c.row != nil {
			_, err := admin.Exec("INSERT INTO "+o.Prefix+"fixed VALUES (?, ?, ?)", k, c.row[0], c.row[1])
			require.NoError(t, err)
		}
		before := p.Count()
		d, err := s.TakeAt(context.Background(), five, storetest.Key, storetest.T0)
		trips := p.Count() - before
		if c.conflict {
			assert.ErrorIs(t, err, ratelab.ErrRuleConflict, c.name)
		} else if assert.NoError(t, err, c.name) {
			assert.Equal(t, []any{c.allowed, c.remaining}, []any{d.Allowed, d.Remaining}, "%s: allowed, remaining", c.name)
		}
		got := make([]int64, 2)
		require.NoError(t, admin.QueryRow("SELECT count, reset_at FROM "+o.Prefix+"fixed WHERE k = ?", k).Scan(&got[0], &got[1]))
		assert.Equal(t, c.want, got, "%s: the row after the hit", c.name)
		assert.Equal(t, c.trips, trips, "%s: round trips", c.name)
	}
}

// The deadline is checked once the row is locked: a hit that waited for a
// row another transaction held until after its deadline is not counted,
// even where the server's max_statement_time does not end the wait first
// (OpenDB given a longer timeout than the store's). Checked before the
// row lock, as the upsert alone did, the hit was counted after its client
// had reported it failed.
func TestALockWaitPastTheDeadlineIsNotCounted(t *testing.T) {
	skipWithoutServer(t)
	o := storetest.Options{Prefix: fmt.Sprintf("wait%d_", prefixes.Add(1)), Timeout: time.Second, Policy: ratelab.FailClosed}
	s := connect(t, server.DSN, 10*time.Second)(o)
	require.NoError(t, s.CheckServer(context.Background()))
	storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0) // count 1
	admin := open(t, server.DSN, 5*time.Second)
	tx, err := admin.Begin()
	require.NoError(t, err)
	t.Cleanup(func() { tx.Rollback() })
	var k string
	require.NoError(t, tx.QueryRow("SELECT k FROM "+o.Prefix+"fixed FOR UPDATE").Scan(&k))
	_, err = s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0) // waits, past its deadline
	require.Error(t, err, "the hit was reported failed")
	require.NoError(t, tx.Rollback()) // the statement, still waiting, gets the row
	require.NoError(t, poll.Until(10*time.Second, 20*time.Millisecond, func() error {
		var n int
		err := admin.QueryRow(`SELECT COUNT(*) FROM information_schema.PROCESSLIST
WHERE ID <> CONNECTION_ID() AND USER = 'ratelab' AND COMMAND <> 'Sleep'`).Scan(&n)
		if err == nil && n > 0 {
			err = fmt.Errorf("%d statements running", n)
		}
		return err
	}))
	after := storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0)
	assert.Equal(t, int64(28), after.Remaining, "count 2: the hit reported failed was not counted")
}

// A server that prepares no statement (max_prepared_stmt_count = 0, as a
// host may set it) gets the hit's UPDATE as text, asked to prepare it once
// per connection: one round trip a hit, and every store check.
func TestStoreUnprepared(t *testing.T) {
	sqlserver.NeedMariaDB(t)
	srv, err := sqlserver.StartMariaDB("--max-prepared-stmt-count=0")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	db := open(t, srv.DSN, 5*time.Second)
	_, err = db.Prepare("SELECT 1")
	var me *mysql.MySQLError
	require.True(t, errors.As(err, &me) && me.Number == 1461, "the server refuses to prepare: %v", err)
	p, err := sqlserver.CountTrips(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	s := connect(t, strings.Replace(srv.DSN, srv.Addr, p.Addr, 1), 5*time.Second)(storetest.Options{Prefix: "trips_", Timeout: 5 * time.Second})
	require.NoError(t, s.CheckServer(context.Background()))
	storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0) // the row; the refusal
	before := p.Count()
	for range 5 {
		storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0)
	}
	assert.Equal(t, int64(5), p.Count()-before, "round trips of 5 hits")
	stores := connect(t, srv.DSN, 5*time.Second)
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		o := storetest.Options{Prefix: fmt.Sprintf("unprepared%d_", prefixes.Add(1)), Timeout: 5 * time.Second}
		require.NoError(t, stores(o).CheckServer(context.Background()))
		return func() ratelab.Store { return stores(o) }
	}, true)
}
