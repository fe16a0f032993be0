package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// newStore makes the process's store. Called once per process, it is
// exactly what the lesson is about: a memory store made here lives and
// dies with this process; the others keep their states outside it.
func (a App) newStore(logger *slog.Logger) (ratelab.Store, error) {
	// !+store
	switch a.Store {
	case "memory":
		return new(brokeninmemory.Store), nil
	case "file":
		return fixedfilestore.New(a.Dir, fixedfilestore.Options{FailPolicy: a.FailPolicy, Logger: logger})
	case "redis":
		c, err := redisstore.NewClient(a.RedisURL, 0)
		if err != nil {
			return nil, err
		}
		return redisstore.New(c, redisstore.Options{FailPolicy: a.FailPolicy, Logger: logger})
	case "mysql":
		db, err := mysqlstore.OpenDB(a.DSN, 0, 0)
		if err != nil {
			return nil, err
		}
		return mysqlstore.New(db, mysqlstore.Options{FailPolicy: a.FailPolicy, Logger: logger})
	case "postgres":
		pool, err := postgresstore.OpenPool(a.DSN, 0, 0)
		if err != nil {
			return nil, err
		}
		return postgresstore.New(pool, postgresstore.Options{FailPolicy: a.FailPolicy, Logger: logger})
	}
	// !-store
	return nil, fmt.Errorf("harness: unknown store %q", a.Store)
}

// ErrConfig is wrapped by CheckDatabase's error when the database refused
// the settings or the DSN cannot be parsed: a configuration error to fix
// before serving.
var ErrConfig = errors.New("harness: configuration error")

// CheckDatabase connects the mysql or postgres store to its database and
// creates its tables if they are missing. An error wrapping ErrConfig is a
// configuration error (a bad DSN, refused credentials, a missing
// database); any other error is an outage, which the fail policy handles
// once hits come.
func (a App) CheckDatabase(ctx context.Context) error {
	var check func(context.Context) error
	switch a.Store {
	case "mysql":
		db, err := mysqlstore.OpenDB(a.DSN, 0, 0)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		defer db.Close()
		s, err := mysqlstore.New(db, mysqlstore.Options{})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		check = s.CheckServer
	case "postgres":
		pool, err := postgresstore.OpenPool(a.DSN, 0, 0)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		defer pool.Close()
		s, err := postgresstore.New(pool, postgresstore.Options{})
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		check = s.CheckServer
	default:
		return fmt.Errorf("%w: store %q has no database", ErrConfig, a.Store)
	}
	err := check(ctx)
	if errors.Is(err, mysqlstore.ErrRefused) || errors.Is(err, postgresstore.ErrRefused) {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return err
}
