package databaselock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/go-sql-driver/mysql"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
	sqlstore "github.com/ratelab/ratelab/sql_store"
)

// The harness's kinds of the database stores: every process on every host
// that reaches one database shares its counts. A program that imports
// this package can run them under every execution model.
const (
	MySQL    harness.StoreKind = "mysql"
	Postgres harness.StoreKind = "postgres"
)

func init() {
	harness.Register(MySQL, harness.Kind{Reach: harness.AllHosts, Shares: "one database", Prepare: prepare,
		Check: needServer(MySQL, "-mysql 'user:password@tcp(127.0.0.1:3306)/ratelab'"), Open: openMySQL})
	harness.Register(Postgres, harness.Kind{Reach: harness.AllHosts, Shares: "one database", Prepare: prepare,
		Check: needServer(Postgres, "-postgres postgres://user:password@127.0.0.1:5432/ratelab"), Open: openPostgres})
}

// openMySQL opens the store of one process. The driver has one logger
// per process: its lines (the cause of a connection given up) become
// records of log, as the store's own are.
func openMySQL(a harness.App, log *slog.Logger) (ratelab.Store, io.Closer, error) {
	mysql.SetLogger(mysqlstore.NewDriverLog(log))
	db, err := mysqlstore.OpenDB(a.Server, 0, a.Conns)
	if err != nil {
		return nil, nil, err
	}
	s, err := mysqlstore.New(db, mysqlstore.Options{Logger: log, Prefix: a.Prefix})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

func openPostgres(a harness.App, log *slog.Logger) (ratelab.Store, io.Closer, error) {
	pool, err := postgresstore.OpenPool(a.Server, 0, a.Conns)
	if err != nil {
		return nil, nil, err
	}
	s, err := postgresstore.New(pool, postgresstore.Options{Logger: log, Prefix: a.Prefix})
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return s, closerFunc(func() error { pool.Close(); return nil }), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// needServer is the Check of kind, whose server the flag names.
func needServer(kind harness.StoreKind, flag string) func(harness.App) error {
	return func(a harness.App) error {
		if a.Server == "" {
			return fmt.Errorf("harness: the %s store needs a database (%s, or RATELAB_DSN)", kind, flag)
		}
		return nil
	}
}

// database is what a database store does besides hits: it connects and
// creates its tables if they are missing, refused settings wrapping its
// package's ErrRefused.
type database interface {
	CheckServer(ctx context.Context) error
	HasTables(ctx context.Context) (bool, error)
	Usage(ctx context.Context) (sqlstore.Usage, error)
	Clear(ctx context.Context) error
}

// prepare is the database kinds' Prepare: it connects and creates the
// tables if they are missing, as every process of the cgi model must,
// since no process outlives its request. Refused credentials or a missing
// database wrap harness.ErrConfig.
func prepare(ctx context.Context, s ratelab.Store) error {
	err := s.(database).CheckServer(ctx)
	if errors.Is(err, mysqlstore.ErrRefused) || errors.Is(err, postgresstore.ErrRefused) {
		return fmt.Errorf("%w: %w", harness.ErrConfig, err)
	}
	return err
}

// CheckDatabase connects the mysql or postgres store of a to its
// database, creates its tables if they are missing, and returns what the
// server says of its client connections, read in the same session: how
// many it accepts, and how many are open besides that session (unread if
// the server will not tell, which is no error). Refused settings or a
// bad DSN wrap harness.ErrConfig.
func CheckDatabase(ctx context.Context, a harness.App) (u sqlstore.Usage, err error) {
	err = withDatabase(a, func(s database) (err error) {
		if err = prepare(ctx, s.(ratelab.Store)); err == nil {
			u, err = s.Usage(ctx)
		}
		return err
	})
	return u, err
}

// HasTables reports whether the database of a's mysql or postgres store
// holds either of the store's tables, under a.Prefix; it creates nothing.
func HasTables(ctx context.Context, a harness.App) (has bool, err error) {
	err = withDatabase(a, func(s database) (err error) {
		has, err = s.HasTables(ctx)
		return err
	})
	return has, err
}

// ClearStates deletes every state from the tables of a's mysql or
// postgres store, under a.Prefix, and leaves the tables: a
// demonstration's next run starts afresh.
func ClearStates(ctx context.Context, a harness.App) error {
	return withDatabase(a, func(s database) error { return s.Clear(ctx) })
}

// withDatabase runs f on a store of a's database with one connection, and
// closes it.
func withDatabase(a harness.App, f func(database) error) error {
	a.Conns = 1
	open := map[harness.StoreKind]func(harness.App, *slog.Logger) (ratelab.Store, io.Closer, error){
		MySQL: openMySQL, Postgres: openPostgres}[a.Store]
	if open == nil {
		return fmt.Errorf("%w: store %q has no database", harness.ErrConfig, a.Store)
	}
	s, closer, err := open(a, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("%w: %w", harness.ErrConfig, err)
	}
	defer closer.Close()
	return f(s.(database))
}

// DatabaseDemo runs the two-hosts model with the file store, then with
// each database store whose DSN dsns holds, one by one and as a burst.
// reset runs before every row so that each starts with empty tables.
func DatabaseDemo(ctx context.Context, app harness.App, workers int, w httphost.Workload, dir string, dsns map[harness.StoreKind]string, reset func() error, progress io.Writer) (httphost.Report, error) {
	file := app
	file.Store = harness.File
	cases := []httphost.Case{{Model: harness.TwoHosts, App: file}}
	for _, k := range []harness.StoreKind{MySQL, Postgres} {
		if dsns[k] != "" {
			db := app
			db.Store, db.Server = k, dsns[k]
			cases = append(cases, httphost.Case{Model: harness.TwoHosts, App: db})
		}
	}
	return httphost.RunCases(ctx, httphost.Report{Store: "file, databases"}, cases, workers, w, dir, reset, progress)
}
