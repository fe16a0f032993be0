package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/storetest"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

// mariadb and postgres are the package's private database servers, one of
// each for all its tests, each test a database of its own on them.
var (
	mariadb  = &sqlserver.Shared{Start: sqlserver.StartMariaDB}
	postgres = &sqlserver.Shared{Start: sqlserver.StartPostgres}
)

// database is a database store as these tests drive serve with it: its
// shared private server, and DSNs that are wrong in each way.
type database struct {
	store, flag string
	shared      *sqlserver.Shared
	// badDSN cannot be parsed; wrongPassword, missingDB and noTLS (TLS
	// required, which the private server does not offer) are refused.
	badDSN                          string
	wrongPassword, missingDB, noTLS func(addr string) string
	down                            string // nobody listens: an outage
}

var databases = []database{
	{"mysql", "-mysql", mariadb, "not a dsn",
		func(addr string) string { return "ratelab:wrong@tcp(" + addr + ")/ratelab" },
		func(addr string) string { return "ratelab:" + sqlserver.Password + "@tcp(" + addr + ")/nosuchdb" },
		func(addr string) string {
			return "ratelab:" + sqlserver.Password + "@tcp(" + addr + ")/ratelab?tls=true"
		},
		"ratelab:x@tcp(127.0.0.1:1)/ratelab"},
	{"postgres", "-postgres", postgres, "postgres://a b",
		func(addr string) string { return "postgres://ratelab:wrong@" + addr + "/ratelab" },
		func(addr string) string { return "postgres://ratelab:" + sqlserver.Password + "@" + addr + "/nosuchdb" },
		func(addr string) string {
			return "postgres://ratelab:" + sqlserver.Password + "@" + addr + "/ratelab?sslmode=require"
		},
		"postgres://ratelab:x@127.0.0.1:1/ratelab"},
}

// Configuration errors of a database store exit 2 before the URL; an
// unreachable database is an outage: a warning, and serve runs. With the
// right DSN, the CGI model — a new process per request — answers 429 from
// #31, because every process counts in the one database.
// The attacker's finding: with two hosts in the URL, pgx's error gives
// each host a line of its own, and serve's warning ran over three. It is
// one line, the rest of the banner after it.
func TestServeWarnsInOneLine(t *testing.T) {
	url, _, out := startServe(t, "", "-model", "pool", "-store", "postgres",
		"-postgres", "postgres://u:p@127.0.0.1:1,127.0.0.1:2/db", "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "an unreachable database is an outage, not a configuration error: %s", out.String())
	warning := lineWith(out.String(), "ratelab serve: warning:")
	assert.Contains(t, warning, "127.0.0.1:2", "both hosts' errors")
	assert.True(t, strings.HasSuffix(warning, "every hit fails open"), "got %q, want one line that ends with the policy", warning)
}

func TestServeWithADatabase(t *testing.T) {
	for _, db := range databases {
		t.Run(db.store, func(t *testing.T) {
			serve := func(dsn string) (string, int, string) {
				url, code, stderr := startServe(t, "", "-model", "cgi", "-store", db.store, db.flag, dsn, "-addr", "127.0.0.1:0")
				return url, code, stderr.String()
			}
			url, code, stderr := serve(db.badDSN)
			assert.Empty(t, url)
			assert.Equal(t, 2, code, stderr)

			url, _, stderr = serve(db.down)
			assert.NotEmpty(t, url, "an unreachable database is an outage, not a configuration error")
			assert.Contains(t, stderr, "is unreachable", "the warning")
			assert.Contains(t, stderr, "every hit fails open", "the warning")

			srv := db.shared.Server(t)
			for _, dsn := range []string{db.wrongPassword(srv.Addr), db.missingDB(srv.Addr), db.noTLS(srv.Addr)} {
				url, code, stderr = serve(dsn)
				assert.Empty(t, url, dsn)
				assert.Equal(t, 2, code, "%s: %s", dsn, stderr)
				assert.Contains(t, stderr, "refused", dsn)
			}

			url, code, stderr = serve(db.shared.Database(t))
			require.NotEmpty(t, url, "serve exited %d: %s", code, stderr)
			client := &http.Client{Timeout: 10 * time.Second}
			var statuses []string
			for range 35 {
				resp, err := client.Post(url, "", nil)
				require.NoError(t, err)
				resp.Body.Close()
				statuses = append(statuses, resp.Status[:3])
			}
			assert.Equal(t, strings.Repeat("200 ", 30)+strings.Repeat("429 ", 5), strings.Join(statuses, " ")+" ")
		})
	}
}

// make demo-db: every lesson row and every two-hosts row as claimed.
func TestDBDemo(t *testing.T) {
	sqlserver.NeedMariaDB(t)
	sqlserver.NeedPostgres(t)
	code, stdout, stderr := cli("db", "-requests", "40", "-stable", "-at", "2026-07-09T00:00:00Z")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	assert.Contains(t, stdout, "PASS: every row shows what the demo claims")
	assert.Contains(t, stdout, "MariaDB: read, then write, innodb_snapshot_isolation=OFF    1 of 2 hits lost")
	assert.Contains(t, stdout, "MariaDB: read, then write, innodb_snapshot_isolation=ON     ERROR 1020 for A, retried: 0 of 2 lost")
	assert.Contains(t, stdout, "PostgreSQL: lock row committed, holder killed")
}

// The finding: ratelab db, pointed at a database, ran DELETE FROM
// ratelab_fixed and dropped lesson tables there — a planted row was gone.
// It refuses a database that holds the store's live tables unless told,
// and even then writes its own tables only.
func TestDBKeepsToItsOwnTables(t *testing.T) {
	sqlserver.NeedMariaDB(t)
	sqlserver.NeedPostgres(t)
	my, pg := mariadb.Database(t), postgres.Database(t)
	live := func(store, dsn string) ratelab.Store { // a store in use, with the default tables and one row
		a := harness.App{Store: harness.StoreKind(store), Server: dsn, Limit: 30, Window: time.Hour}
		_, err := databaselock.CheckDatabase(context.Background(), a)
		require.NoError(t, err)
		s, err := map[string]func() (ratelab.Store, error){
			"mysql": func() (ratelab.Store, error) {
				db, err := mysqlstore.OpenDB(dsn, 0, 1)
				require.NoError(t, err)
				t.Cleanup(func() { db.Close() })
				return mysqlstore.New(db, mysqlstore.Options{})
			},
			"postgres": func() (ratelab.Store, error) {
				pool, err := postgresstore.OpenPool(dsn, 0, 1)
				require.NoError(t, err)
				t.Cleanup(pool.Close)
				return postgresstore.New(pool, postgresstore.Options{})
			},
		}[store]()
		require.NoError(t, err)
		storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0)
		return s
	}
	stores := map[string]ratelab.Store{"mysql": live("mysql", my), "postgres": live("postgres", pg)}

	code, _, stderr := cli("db", "-mysql", my, "-postgres", pg, "-requests", "40", "-stable", "-at", "2026-07-09T00:00:00Z")
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "holds ratelab's live tables")
	code, stdout, stderr := cli("db", "-mysql", my, "-postgres", pg, "-force", "-requests", "40", "-stable", "-at", "2026-07-09T00:00:00Z")
	require.Equal(t, 0, code, "stdout: %s\nstderr: %s", stdout, stderr)
	for name, s := range stores {
		assert.Equal(t, int64(28), storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0).Remaining,
			"%s: the planted row kept its count", name)
	}
}

// The finding: each worker could open 64 connections, 8 workers against
// MariaDB's 151, and the server's "Too many connections" failed hits open.
// serve shares the connections out, says how, and refuses more workers
// than the server has connections for (PostgreSQL's 100, less the 3 kept
// for superusers: 97, three quarters shared out).
func TestServeSharesTheDatabasesConnections(t *testing.T) {
	sqlserver.NeedPostgres(t)
	dsn := postgres.Database(t)
	url, code, stderr := startServe(t, "", "-model", "pool", "-workers", "4", "-store", "postgres", "-postgres", dsn, "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
	// Written before the URL; its pipe may deliver it later.
	assert.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "postgres accepts 97 connections; 4 processes × 10 each, a quarter kept for other clients")
	}, 5*time.Second, time.Millisecond, "stderr: %s", stderr)
	url, code, stderr = startServe(t, "", "-model", "two-hosts", "-workers", "40", "-store", "postgres", "-postgres", dsn, "-addr", "127.0.0.1:0")
	assert.Empty(t, url)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "80 processes need a connection each, and the server accepts 97")

	// Under cgi, the programs the front runs at once open one each.
	url, code, stderr = startServe(t, "", "-model", "cgi", "-cgi-procs", "8", "-store", "postgres", "-postgres", dsn, "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
	assert.Eventually(t, func() bool {
		return strings.Contains(stderr.String(), "postgres accepts 97 connections; under cgi at most 8 programs at once, one each")
	}, 5*time.Second, time.Millisecond, "stderr: %s", stderr)
	url, code, stderr = startServe(t, "", "-model", "cgi", "-cgi-procs", "80", "-store", "postgres", "-postgres", dsn, "-addr", "127.0.0.1:0")
	assert.Empty(t, url)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "-cgi-procs 80: 80 processes need a connection each, and the server accepts 97")
}

// #44 item 9, end to end: two serve instances on one MariaDB took more
// connections than it had. serve reads the connections open on its
// database before it prints its URL, and warns, in one line, when they
// and its workers' (2 × 7 on a MariaDB that accepts 20, and its breaker
// watcher's one) are more than the server accepts; started beside nothing but an idle serve, it says
// nothing.
func TestServeWarnsWhenTheDatabaseMayRunOutOfConnections(t *testing.T) {
	srv := sqlserver.ForTest(t, sqlserver.StartMariaDB, "--max-connections=20")
	serve := func() string {
		url, code, stderr := startServe(t, "", "-model", "pool", "-workers", "2", "-store", "mysql", "-mysql", srv.DSN, "-addr", "127.0.0.1:0")
		require.NotEmpty(t, url, "serve exited %d: %s", code, stderr)
		require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "serving model=pool") }, 10*time.Second, time.Millisecond,
			"the banner, written last: %s", stderr)
		return stderr.String()
	}
	out := serve()
	assert.Contains(t, out, "mysql accepts 20 connections; 2 processes × 7 each")
	assert.NotContains(t, out, "level=WARN")

	ctx := context.Background()
	db, err := sql.Open("mysql", srv.DSN)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(12)
	var held []*sql.Conn
	for range 12 {
		c, err := db.Conn(ctx)
		require.NoError(t, err)
		require.NoError(t, c.PingContext(ctx))
		held = append(held, c)
	}
	require.NoError(t, poll.Until(10*time.Second, 20*time.Millisecond, func() error {
		var name string
		var n int
		err := held[0].QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &n)
		if err == nil && n != len(held)+1 { // and the idle serve's breaker watcher; its check may not have ended yet
			err = fmt.Errorf("the server counts %d connections, %d held and the idle serve's watcher", n, len(held))
		}
		return err
	}))
	out = serve()
	assert.Equal(t, 1, strings.Count(out, "level=WARN"), out)
	assert.Contains(t, out, "store=mysql open=13 budget=15 accepts=20 max_connections=20")
	assert.Contains(t, out, "lower -workers")
	assert.NotContains(t, out, sqlserver.Password)
}

// A database that takes connections and never answers: serve warns at
// start that it does not answer and that a hit that runs out of time is
// refused as busy — the warning said "every hit fails open" (an
// attacker's finding) — and once its front's breaker has seen the pings
// go unanswered and opened, a hit is decided by the default policy at
// once: let through, uncounted (#44 item 7).
func TestServeSaysASilentDatabaseRefusesHits(t *testing.T) {
	addr := storetest.SilentServer(t)
	for _, db := range []struct{ store, flag, dsn string }{
		{"mysql", "-mysql", "ratelab:x@tcp(" + addr + ")/ratelab"},
		{"postgres", "-postgres", "postgres://ratelab:x@" + addr + "/ratelab"},
	} {
		t.Run(db.store, func(t *testing.T) {
			url, code, stderr := startServe(t, "", "-model", "single", "-store", db.store, db.flag, db.dsn, "-addr", "127.0.0.1:0")
			require.NotEmpty(t, url, "serve exited %d: %s", code, stderr)
			assert.Contains(t, stderr.String(), "too busy to answer")
			assert.Contains(t, stderr.String(), "refused as busy (503)")
			assert.Contains(t, stderr.String(), "decided by the fail policy at once")
			require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "breaker open") }, 30*time.Second, 10*time.Millisecond,
				"the front's breaker opens: %s", stderr)
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(url, "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, "fail-open, the breaker open")
			assert.Empty(t, resp.Header.Get("RateLimit"), "not counted")
		})
	}
}
