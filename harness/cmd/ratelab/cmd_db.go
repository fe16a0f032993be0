package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strings"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/sqltest"
)

// cmdDB runs the database lessons on MariaDB and PostgreSQL — private
// servers unless -mysql or -postgres names one — and the two-hosts model
// with files and with each database.
func cmdDB(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("db", stdout)
	mysqlDSN := f.String("mysql", "", "a MariaDB/MySQL database to use, 'user:password@tcp(host:port)/db' (default: start a private mariadbd)")
	pgURL := f.String("postgres", "", "a PostgreSQL database to use, postgres://user:password@host:port/db (default: start a private postgres)")
	requests := f.Int("requests", 130, "requests from one client address (> 0)")
	conc := f.Int("concurrency", 8, "requests in flight in the burst; 1 sends only one by one")
	stable := f.Bool("stable", false, "leave out wall times, so that runs with -at print the same bytes")
	check := f.Bool("check", false, "only report whether the private servers can be started (exit 0) or what to install (exit 1)")
	f.limitFlag().windowFlag().atFlag()
	f.IntVar(&f.workers, "workers", 2, "worker processes per host (> 0)")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *check {
		var missing []string
		if *mysqlDSN == "" && !sqltest.MariaDBAvailable() {
			missing = append(missing, "MariaDB: "+sqltest.MariaDBInstallHint)
		}
		if *pgURL == "" && !sqltest.PostgresAvailable() {
			missing = append(missing, "PostgreSQL: "+sqltest.PostgresInstallHint)
		}
		if len(missing) > 0 {
			fmt.Fprintf(stderr, "not installed: %s\n", strings.Join(missing, "; "))
			return exitFailure, nil
		}
		return exitOK, nil
	}
	if *requests <= 0 || *conc <= 0 {
		return 0, usagef("-requests and -concurrency must be positive")
	}
	app := harness.App{Limit: f.limit, Window: f.window}
	var err error
	if app.Now, err = f.atOrZero(); err != nil {
		return 0, err
	}
	progress := progressTo(stderr, *stable)
	dsns := map[string]string{"mysql": *mysqlDSN, "postgres": *pgURL}
	dbs := []struct {
		store, dialect string
		start          func(...string) (*sqltest.Server, error)
	}{{"mysql", "mariadb", sqltest.StartMariaDB}, {"postgres", "postgres", sqltest.StartPostgres}}
	ctx := context.Background()
	conns := map[string]*sql.DB{} // to empty the store's table between rows
	for _, db := range dbs {
		if dsns[db.store] == "" {
			if progress != nil {
				fmt.Fprintf(progress, "starting a private %s server …\n", db.store)
			}
			srv, err := db.start()
			if err != nil {
				return 0, err
			}
			defer srv.Stop()
			dsns[db.store] = srv.DSN
		}
		a := app
		a.Store, a.DSN = db.store, dsns[db.store]
		if err := a.CheckDatabase(ctx); err != nil { // creates the store's tables
			return 0, usagef("-%s: %v", db.store, err)
		}
		conn, err := sql.Open(databaselock.DriverName(db.dialect), dsns[db.store])
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		conns[db.store] = conn
	}
	var lessons []claim.Claim
	for _, db := range dbs {
		if progress != nil {
			fmt.Fprintf(progress, "lessons on %s …\n", db.dialect)
		}
		rows, err := databaselock.Lessons(ctx, db.dialect, dsns[db.store])
		if err != nil {
			return 0, err
		}
		lessons = append(lessons, rows...)
	}
	claim.Table(stdout, "database lesson", lessons)
	if *stable {
		fmt.Fprintln(stdout)
	}
	reset := func() error {
		for _, conn := range conns {
			if _, err := conn.ExecContext(ctx, "DELETE FROM ratelab_fixed"); err != nil {
				return err
			}
		}
		return nil
	}
	dir, cleanup, err := scratch("db")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	rep, err := harness.DatabaseDemo(ctx, app, f.workers, harness.Workload{Requests: *requests, Concurrency: *conc}, dir, dsns, reset, progress)
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, *stable)
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, claim.All(lessons) && rep.Pass(), "every row shows what the demo claims"), nil
}
