package databaselock_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// connsCase is a private server with max_connections 20, some of its
// connections held open by others, and two instances to check against
// it: one whose budget does not fit beside them, and one whose budget
// fits exactly.
type connsCase struct {
	store harness.StoreKind
	start func(args ...string) (*sqlserver.Server, error)
	args  []string
	held  int
	// over and fits are the instances; warning is what over's warning
	// must name.
	over, fits httphost.Config
	warning    []string
}

var connsCases = []connsCase{
	{databaselock.MySQL, sqlserver.StartMariaDB, []string{"--max-connections=20"}, 12,
		httphost.Config{Model: harness.Pool, Workers: 2, App: harness.App{Conns: 5}}, // 12 + 11 > 20
		httphost.Config{Model: harness.Pool, Workers: 1, App: harness.App{Conns: 7}}, // 12 + 8 = 20
		[]string{"level=WARN", "store=mysql open=12 budget=11 accepts=20 max_connections=20", "lower -workers"}},
	{databaselock.Postgres, sqlserver.StartPostgres, []string{"-c", "max_connections=20"}, 10,
		httphost.Config{Model: harness.CGI, CGIProcs: 8}, // 10 + 9 > 20 - 3
		httphost.Config{Model: harness.CGI, CGIProcs: 6}, // 10 + 7 = 17
		[]string{"level=WARN", "store=postgres open=10 budget=9 accepts=17 max_connections=20 reserved=3", "lower -cgi-procs"}},
}

// The finding (#44 item 9): two serve instances with -workers 11 each on
// one MariaDB reached 152 connections of its 151, and 35 hits of 4000
// were answered 503. Each shares the server's connections out as if it
// were alone. At start it now reads the connections open on the server,
// and warns, in one line naming the numbers, when they and its own budget
// pass what the server accepts; with a budget that fits, it says nothing.
func TestWarnsWhenTheDatabaseMayRunOutOfConnections(t *testing.T) {
	for _, tc := range connsCases {
		t.Run(string(tc.store), func(t *testing.T) {
			t.Parallel()
			srv := sqlserver.ForTest(t, tc.start, tc.args...)
			holdConns(t, tc.store, srv.DSN, tc.held)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			u, err := databaselock.CheckDatabase(ctx, harness.App{Store: tc.store, Server: srv.DSN})
			require.NoError(t, err)
			require.NoError(t, u.Unread)
			assert.Equal(t, tc.held, u.InUse, "the connections open, the check's own left out")
			assert.Equal(t, 20, u.Max)

			for _, c := range []struct {
				cfg  httphost.Config
				warn bool
			}{{tc.over, true}, {tc.fits, false}} {
				var log bytes.Buffer
				c.cfg.App.Store, c.cfg.App.Server = tc.store, srv.DSN
				warned := databaselock.WarnConnections(slog.New(slog.NewTextHandler(&log, nil)), c.cfg, u)
				assert.Equal(t, c.warn, warned, "budget %d", c.cfg.ConnBudget(10))
				if !c.warn {
					assert.Empty(t, log.String(), "a budget that fits")
					continue
				}
				assert.Equal(t, 1, strings.Count(log.String(), "\n"), "one line: %s", log.String())
				for _, want := range tc.warning {
					assert.Contains(t, log.String(), want)
				}
				assert.NotContains(t, log.String(), sqlserver.Password)
				t.Log(log.String())
			}
		})
	}
}

// holdConns opens n connections to the server of dsn for the rest of
// the test, and waits until the server counts exactly those open: the
// server's start left one of its own that may not have ended yet.
func holdConns(t *testing.T, store harness.StoreKind, dsn string, n int) {
	t.Helper()
	ctx := context.Background()
	var count func() (int, error)
	switch store {
	case databaselock.MySQL:
		db, err := sql.Open("mysql", dsn)
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		db.SetMaxIdleConns(n)
		conns := make([]*sql.Conn, n)
		for i := range conns {
			conns[i], err = db.Conn(ctx)
			require.NoError(t, err)
			require.NoError(t, conns[i].PingContext(ctx))
		}
		count = func() (c int, err error) {
			var name string
			return c, conns[0].QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_connected'").Scan(&name, &c)
		}
	case databaselock.Postgres:
		conns := make([]*pgx.Conn, n)
		for i := range conns {
			c, err := pgx.Connect(ctx, dsn)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close(context.Background()) })
			conns[i] = c
		}
		count = func() (c int, err error) {
			return c, conns[0].QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&c)
		}
	}
	require.NoError(t, poll.Until(10*time.Second, 20*time.Millisecond, func() error {
		c, err := count()
		if err == nil && c != n {
			err = fmt.Errorf("the server counts %d connections, %d held", c, n)
		}
		return err
	}))
}

// A role that may not read pg_stat_activity still serves: the check says,
// once, that it cannot tell how many connections are open, and goes on.
func TestSaysWhenTheOpenConnectionsCannotBeRead(t *testing.T) {
	srv := sqlserver.PostgresForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, srv.DSN)
	require.NoError(t, err)
	defer admin.Close(context.Background())
	for _, q := range []string{"CREATE ROLE plain LOGIN PASSWORD 'plain-secret'", "GRANT CREATE ON SCHEMA public TO plain",
		"REVOKE SELECT ON pg_catalog.pg_stat_activity FROM PUBLIC"} {
		_, err := admin.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	app := harness.App{Store: databaselock.Postgres, Server: "postgres://plain:plain-secret@" + srv.Addr + "/ratelab"}
	u, err := databaselock.CheckDatabase(ctx, app)
	require.NoError(t, err, "the count unread is no error")
	require.Error(t, u.Unread)
	assert.Equal(t, 97, u.Usable(), "what the server accepts is read all the same")

	var log bytes.Buffer
	warned := databaselock.WarnConnections(slog.New(slog.NewTextHandler(&log, nil)), httphost.Config{Model: harness.Single, App: app}, u)
	assert.False(t, warned)
	assert.Equal(t, 1, strings.Count(log.String(), "\n"), "one line: %s", log.String())
	assert.Contains(t, log.String(), "level=WARN msg=\"cannot tell how many connections the database has open")
	assert.Contains(t, log.String(), "permission denied")
	assert.NotContains(t, log.String(), "plain-secret")
	t.Log(log.String())
}
