package postgresstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/sqltest"
	"github.com/ratelab/ratelab/internal/storetest"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

var t0 = storetest.T0

// server is one private PostgreSQL for the package's tests, started by
// TestMain; nil when PostgreSQL is not installed (each test then skips).
var server *sqltest.Server

func TestMain(m *testing.M) {
	var err error
	server, err = sqltest.StartPostgres()
	if err != nil && !errors.Is(err, sqltest.ErrNoServer) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if server != nil {
		server.Stop()
	}
	os.Exit(code)
}

var prefixes atomic.Int64

// newPool opens the private server, or skips t with an install hint.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	if server == nil {
		t.Skip("PostgreSQL's server not found: install it with " + sqltest.PostgresInstallHint)
	}
	pool, err := postgresstore.OpenPool(server.DSN, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newStore returns a store on fresh tables (a prefix of their own).
func newStore(t *testing.T, opts postgresstore.Options) (*postgresstore.Store, func() *postgresstore.Store) {
	t.Helper()
	pool := newPool(t)
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("t%d_", prefixes.Add(1))
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second // -race and a shared machine
	}
	another := func() *postgresstore.Store {
		s, err := postgresstore.New(pool, opts)
		require.NoError(t, err)
		return s
	}
	s := another()
	require.NoError(t, s.CheckServer(context.Background()))
	return s, another
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		_, another := newStore(t, postgresstore.Options{})
		return func() ratelab.Store { return another() }
	}, true)
}

func TestStateSurvivesAcrossInstances(t *testing.T) {
	_, another := newStore(t, postgresstore.Options{})
	got := storetest.CrossInstance(t, func(t *testing.T) ratelab.Store { return another() })
	assert.Equal(t, int64(28), got)
}

// Eight connections hammering one key count exactly, for every algorithm.
func TestConcurrentHitsCountExactly(t *testing.T) {
	s, _ := newStore(t, postgresstore.Options{})
	storetest.Exact(t, s)
}

// The key reaches the database hashed.
func TestKeysAreHashed(t *testing.T) {
	s, _ := newStore(t, postgresstore.Options{Prefix: "hashed_"})
	storetest.Take(t, s, storetest.Original, storetest.Key, t0)
	var k string
	var count, reset int64
	require.NoError(t, newPool(t).QueryRow(context.Background(), "SELECT k, count, reset_at FROM hashed_fixed").Scan(&k, &count, &reset))
	assert.Equal(t, s.Key(storetest.Original, storetest.Key), k)
	assert.NotContains(t, k, "203.0.113.7")
	assert.Equal(t, []int64{1, t0.Add(time.Hour).Unix()}, []int64{count, reset})
}

// Sweep deletes what is over, in batches, and keeps what is live.
func TestSweep(t *testing.T) {
	s, _ := newStore(t, postgresstore.Options{})
	storetest.Sweep(t, s, postgresstore.SweepBatch)
}

// The database down: fail-open lets hits through uncounted with one log
// line each, fail-closed returns ErrUnavailable, both within the timeout.
func TestOutageFollowsThePolicy(t *testing.T) {
	pool, err := postgresstore.OpenPool("postgres://ratelab:x@127.0.0.1:1/ratelab", 200*time.Millisecond)
	require.NoError(t, err)
	defer pool.Close()
	storetest.Outage(t, "postgresstore", func(p ratelab.FailPolicy, log *slog.Logger) ratelab.Store {
		s, err := postgresstore.New(pool, postgresstore.Options{FailPolicy: p, Timeout: 200 * time.Millisecond, Logger: log})
		require.NoError(t, err)
		return s
	})
}

// Refused settings are ErrRefused — a configuration error — where an
// unreachable server is not.
func TestCheckServer(t *testing.T) {
	newPool(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, url string
		refused   bool
	}{
		{"wrong password", "postgres://ratelab:wrong@" + server.Addr + "/ratelab", true},
		{"missing database", "postgres://ratelab:" + sqltest.Password + "@" + server.Addr + "/nosuchdb", true},
		{"nobody listening", "postgres://ratelab:x@127.0.0.1:1/ratelab", false},
	} {
		pool, err := postgresstore.OpenPool(tc.url, time.Second)
		require.NoError(t, err)
		s, err := postgresstore.New(pool, postgresstore.Options{})
		require.NoError(t, err)
		err = s.CheckServer(ctx)
		pool.Close()
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.refused, errors.Is(err, postgresstore.ErrRefused), "%s: %v", tc.name, err)
	}
	_, err := postgresstore.OpenPool("postgres://a b", 0)
	assert.Error(t, err)
	_, err = postgresstore.New(newPool(t), postgresstore.Options{Prefix: "x; DROP TABLE y"})
	assert.ErrorContains(t, err, "table prefix")
}
