package mysqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/sqltest"
	"github.com/ratelab/ratelab/internal/storetest"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
)

var t0 = storetest.T0

// server is one private MariaDB for the package's tests, started by
// TestMain; nil when MariaDB is not installed (each test then skips).
var server *sqltest.Server

func TestMain(m *testing.M) {
	var err error
	server, err = sqltest.StartMariaDB()
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

// newDB opens the private server, or skips t with an install hint.
func newDB(t *testing.T) *sql.DB {
	t.Helper()
	if server == nil {
		t.Skip("mariadbd not found: install it with " + sqltest.MariaDBInstallHint)
	}
	db, err := mysqlstore.OpenDB(server.DSN, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore returns a store on fresh tables (a prefix of their own).
func newStore(t *testing.T, opts mysqlstore.Options) (*mysqlstore.Store, func() *mysqlstore.Store) {
	t.Helper()
	db := newDB(t)
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("t%d_", prefixes.Add(1))
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second // -race and a shared machine
	}
	another := func() *mysqlstore.Store {
		s, err := mysqlstore.New(db, opts)
		require.NoError(t, err)
		return s
	}
	s := another()
	require.NoError(t, s.CheckServer(context.Background()))
	return s, another
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		_, another := newStore(t, mysqlstore.Options{})
		return func() ratelab.Store { return another() }
	}, true)
}

func TestStateSurvivesAcrossInstances(t *testing.T) {
	_, another := newStore(t, mysqlstore.Options{})
	got := storetest.CrossInstance(t, func(t *testing.T) ratelab.Store { return another() })
	assert.Equal(t, int64(28), got)
}

// Eight connections hammering one key count exactly, for every algorithm.
func TestConcurrentHitsCountExactly(t *testing.T) {
	s, _ := newStore(t, mysqlstore.Options{})
	storetest.Exact(t, s)
}

// The key reaches the database hashed.
func TestKeysAreHashed(t *testing.T) {
	s, _ := newStore(t, mysqlstore.Options{Prefix: "hashed_"})
	storetest.Take(t, s, storetest.Original, storetest.Key, t0)
	var k string
	var count, reset int64
	require.NoError(t, newDB(t).QueryRow("SELECT k, count, reset_at FROM hashed_fixed").Scan(&k, &count, &reset))
	assert.Equal(t, s.Key(storetest.Original, storetest.Key), k)
	assert.NotContains(t, k, "203.0.113.7")
	assert.Equal(t, []int64{1, t0.Add(time.Hour).Unix()}, []int64{count, reset})
}

// Sweep deletes what is over, in batches, and keeps what is live.
func TestSweep(t *testing.T) {
	s, _ := newStore(t, mysqlstore.Options{})
	storetest.Sweep(t, s, mysqlstore.SweepBatch)
}

// The database down: fail-open lets hits through uncounted with one log
// line each, fail-closed returns ErrUnavailable, both within the timeout.
func TestOutageFollowsThePolicy(t *testing.T) {
	db, err := mysqlstore.OpenDB("ratelab:x@tcp(127.0.0.1:1)/ratelab", 200*time.Millisecond)
	require.NoError(t, err)
	defer db.Close()
	storetest.Outage(t, "mysqlstore", func(p ratelab.FailPolicy, log *slog.Logger) ratelab.Store {
		s, err := mysqlstore.New(db, mysqlstore.Options{FailPolicy: p, Timeout: 200 * time.Millisecond, Logger: log})
		require.NoError(t, err)
		return s
	})
}

// Refused settings are ErrRefused — a configuration error — where an
// unreachable server is not.
func TestCheckServer(t *testing.T) {
	newDB(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name, dsn string
		refused   bool
	}{
		{"wrong password", "ratelab:wrong@tcp(" + server.Addr + ")/ratelab", true},
		{"missing database", "ratelab:" + sqltest.Password + "@tcp(" + server.Addr + ")/nosuchdb", true},
		{"nobody listening", "ratelab:x@tcp(127.0.0.1:1)/ratelab", false},
	} {
		db, err := mysqlstore.OpenDB(tc.dsn, time.Second)
		require.NoError(t, err)
		s, err := mysqlstore.New(db, mysqlstore.Options{})
		require.NoError(t, err)
		err = s.CheckServer(ctx)
		db.Close()
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.refused, errors.Is(err, mysqlstore.ErrRefused), "%s: %v", tc.name, err)
	}
	_, err := mysqlstore.OpenDB("not a dsn", 0)
	assert.Error(t, err)
	_, err = mysqlstore.New(newDB(t), mysqlstore.Options{Prefix: "x; DROP TABLE y"})
	assert.ErrorContains(t, err, "table prefix")
}
