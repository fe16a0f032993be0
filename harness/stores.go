package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// workerLogger is the log of a process that serves requests, to w; it is
// go-redis's too (its logger is one per process), so that a dial that
// failed is a record like the store's, not a line of another format.
func workerLogger(w io.Writer) *slog.Logger {
	logger := slog.New(slog.NewTextHandler(w, nil))
	redis.SetLogger(redisstore.GoRedisLog{Logger: logger})
	return logger
}

// newStore makes the process's store, and returns it with what closes
// its connections. Called once per process, it is exactly what the lesson
// is about: a memory store made here lives and dies with this process;
// the others keep their states outside it.
func (a App) newStore(logger *slog.Logger) (ratelab.Store, func() error, error) {
	nothing := func() error { return nil }
	// !+store
	switch a.Store {
	case "memory":
		return new(brokeninmemory.Store), nothing, nil
	case "file":
		s, err := fixedfilestore.New(a.Dir, fixedfilestore.Options{FailPolicy: a.FailPolicy, Logger: logger})
		return s, nothing, err
	case "redis":
		c, err := redisstore.NewClient(a.RedisURL, 0)
		if err != nil {
			return nil, nil, err
		}
		s, err := redisstore.New(c, redisstore.Options{FailPolicy: a.FailPolicy, Logger: logger,
			WaitReplicas: a.RedisWait, WaitTimeout: a.RedisWaitTimeout})
		return s, c.Close, err
	case "mysql":
		db, err := mysqlstore.OpenDB(a.DSN, 0, a.Conns)
		if err != nil {
			return nil, nil, err
		}
		s, err := mysqlstore.New(db, mysqlstore.Options{FailPolicy: a.FailPolicy, Logger: logger, Prefix: a.Prefix})
		return s, db.Close, err
	case "postgres":
		pool, err := postgresstore.OpenPool(a.DSN, 0, a.Conns)
		if err != nil {
			return nil, nil, err
		}
		s, err := postgresstore.New(pool, postgresstore.Options{FailPolicy: a.FailPolicy, Logger: logger, Prefix: a.Prefix})
		return s, func() error { pool.Close(); return nil }, err
	}
	// !-store
	return nil, nil, fmt.Errorf("harness: unknown store %q", a.Store)
}

// ErrConfig is wrapped by the errors of Prepare and CheckDatabase when the
// store's server refused the settings or the DSN cannot be parsed: a
// configuration error to fix before serving.
var ErrConfig = errors.New("harness: configuration error")

// serverChecker is a database store: it connects and creates its tables
// if they are missing, refused settings wrapping its package's
// ErrRefused.
type serverChecker interface {
	CheckServer(ctx context.Context) error
	HasTables(ctx context.Context) (bool, error)
	Connections(ctx context.Context) (int, error)
	Clear(ctx context.Context) error
}

// Prepare gets a database store made by newStore ready to take hits, as
// every process of the cgi model must, since no process outlives its
// request: it connects and creates the tables if they are missing. Other
// stores need nothing. An error wrapping ErrConfig is a configuration
// error (refused credentials, a missing database); any other error is an
// outage, which the fail policy handles once hits come.
func Prepare(ctx context.Context, store ratelab.Store) error {
	c, ok := store.(serverChecker)
	if !ok {
		return nil
	}
	err := c.CheckServer(ctx)
	if errors.Is(err, mysqlstore.ErrRefused) || errors.Is(err, postgresstore.ErrRefused) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return err
}

// CheckDatabase connects the mysql or postgres store to its database,
// creates its tables if they are missing, and returns how many client
// connections the server accepts. Errors are Prepare's; a bad DSN wraps
// ErrConfig too.
func (a App) CheckDatabase(ctx context.Context) (connections int, err error) {
	err = a.withDatabase(func(s serverChecker) (err error) {
		if err = Prepare(ctx, s.(ratelab.Store)); err == nil {
			connections, err = s.Connections(ctx)
		}
		return err
	})
	return connections, err
}

// HasTables reports whether the database of the mysql or postgres store
// holds either of the store's tables, under a.Prefix; it creates nothing.
func (a App) HasTables(ctx context.Context) (has bool, err error) {
	err = a.withDatabase(func(s serverChecker) (err error) {
		has, err = s.HasTables(ctx)
		return err
	})
	return has, err
}

// ClearStates deletes every state from the tables of the mysql or
// postgres store, under a.Prefix, and leaves the tables: a demonstration's
// next run starts afresh.
func (a App) ClearStates(ctx context.Context) error {
	return a.withDatabase(func(s serverChecker) error { return s.Clear(ctx) })
}

// withDatabase runs f on a store of a's database with one connection, and
// closes it.
func (a App) withDatabase(f func(serverChecker) error) error {
	if a.Store != "mysql" && a.Store != "postgres" {
		return fmt.Errorf("%w: store %q has no database", ErrConfig, a.Store)
	}
	a.Conns = 1
	store, closeStore, err := a.newStore(slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer closeStore()
	return f(store.(serverChecker))
}
