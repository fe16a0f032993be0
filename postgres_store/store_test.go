package postgresstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/shortmode"
	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/storetest"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

// server is one private PostgreSQL for the package's tests, started by
// TestMain; nil when PostgreSQL is not installed (each test then skips).
var server *sqlserver.Server

func TestMain(m *testing.M) { sqlserver.Main(m, sqlserver.StartPostgres, &server) }

// connect opens url for t and returns a constructor of stores on it.
func connect(t testing.TB, url string, timeout time.Duration) func(storetest.Options) storetest.DatabaseStore {
	t.Helper()
	pool := open(t, url, timeout)
	return func(o storetest.Options) storetest.DatabaseStore {
		s, err := postgresstore.New(pool, postgresstore.Options{Prefix: o.Prefix, Timeout: o.Timeout, Logger: o.Logger})
		require.NoError(t, err)
		return storetest.BehindPolicy(s, o)
	}
}

func open(t testing.TB, url string, timeout time.Duration) *pgxpool.Pool {
	t.Helper()
	pool, err := postgresstore.OpenPool(url, timeout, 0)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func skipWithoutServer(t *testing.T) {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("PostgreSQL"))
	}
	if server == nil {
		t.Skip("PostgreSQL's server not found: install it with " + sqlserver.PostgresInstallHint)
	}
}

func TestStore(t *testing.T) {
	skipWithoutServer(t)
	storetest.RunDatabase(t, storetest.Database{Pkg: "postgresstore", Connect: connect, DSN: server.DSN, Addr: server.Addr,
		Unreachable:   "postgres://ratelab:x@127.0.0.1:1/ratelab",
		WrongPassword: "postgres://ratelab:wrong@" + server.Addr + "/ratelab",
		MissingDB:     "postgres://ratelab:" + sqlserver.Password + "@" + server.Addr + "/nosuchdb",
		NoTLS:         "postgres://ratelab:" + sqlserver.Password + "@" + server.Addr + "/ratelab?sslmode=require", // the private server offers none
		ReadOnly:      "postgres://ratelab:" + sqlserver.Password + "@" + server.Addr + "/ratelab?default_transaction_read_only=on",
		At:            func(addr string) string { return "postgres://ratelab:" + sqlserver.Password + "@" + addr + "/ratelab" },
		Refused:       postgresstore.ErrRefused, SweepSize: postgresstore.SweepBatch,
		Hold: func(t testing.TB, dsn, table, k string) func() {
			ctx := context.Background()
			tx, err := open(t, dsn, 5*time.Second).Begin(ctx)
			require.NoError(t, err)
			var got string
			require.NoError(t, tx.QueryRow(ctx, "SELECT k FROM "+table+" WHERE k = $1 FOR UPDATE", k).Scan(&got))
			return func() { tx.Rollback(ctx) }
		},
		Exec: func(t testing.TB, dsn, q string) {
			_, err := open(t, dsn, 5*time.Second).Exec(context.Background(), q)
			require.NoError(t, err)
		},
		// Sessions is polled: its pool is closed at once, not at the end
		// of the test, or each poll would keep a session open (and a busy
		// machine polls often enough to reach max_connections).
		Sessions: func(t testing.TB, dsn string) (n int64) {
			pool := open(t, dsn, 5*time.Second)
			defer pool.Close()
			require.NoError(t, pool.QueryRow(context.Background(),
				"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()").Scan(&n))
			return n
		},
		Fill: func(t testing.TB, dsn string) func() {
			ctx := context.Background()
			var conns []*pgx.Conn
			release := func() {
				for _, c := range conns {
					c.Close(ctx)
				}
				conns = nil
			}
			t.Cleanup(release)
			for len(conns) < 1000 {
				c, err := pgx.Connect(ctx, dsn)
				var pe *pgconn.PgError
				if errors.As(err, &pe) && pe.Code == "53300" {
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
	t.Cleanup(func() {
		open(t, server.DSN, time.Second).Exec(context.Background(), "DROP TABLE hashed_fixed, hashed_state")
	})
	storetest.Take(t, s, storetest.Original, storetest.Key, storetest.T0)
	var k string
	var count, reset int64
	require.NoError(t, open(t, server.DSN, time.Second).QueryRow(context.Background(), "SELECT k, count, reset_at FROM hashed_fixed").Scan(&k, &count, &reset))
	assert.Equal(t, storetest.Raw(s).(*postgresstore.Store).Key(storetest.Original, storetest.Key), k)
	assert.NotContains(t, k, "203.0.113.7")
	assert.Equal(t, []int64{1, storetest.T0.Add(time.Hour).Unix()}, []int64{count, reset})
}

func TestBadOptions(t *testing.T) {
	_, err := postgresstore.OpenPool("postgres://a b", 0, 0)
	assert.Error(t, err)
	pool, err := postgresstore.OpenPool("postgres://ratelab:x@127.0.0.1:1/ratelab", 0, 0)
	require.NoError(t, err)
	defer pool.Close()
	_, err = postgresstore.New(pool, postgresstore.Options{Prefix: "x; DROP TABLE y"})
	assert.ErrorContains(t, err, "table prefix")
	_, err = postgresstore.New(nil, postgresstore.Options{})
	assert.Error(t, err)
}
