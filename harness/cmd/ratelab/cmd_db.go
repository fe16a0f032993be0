package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/lab/sqlserver"
	"github.com/ratelab/ratelab/internal/redact"
)

// cmdDB runs the database lessons on MariaDB and PostgreSQL — private
// servers unless -mysql or -postgres names one — and the two-hosts model
// with files and with each database.
func cmdDB(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("db", stdout)
	mysqlDSN := f.String("mysql", "", "a MariaDB/MySQL database for the lessons, 'user:password@tcp(host:port)/db'; they create and empty "+
		"the tables "+lessonTables+" in it, and leave them (default: start a private mariadbd)")
	pgURL := f.String("postgres", "", "a PostgreSQL database for the lessons, postgres://user:password@host:port/db; they create and empty "+
		"the tables "+lessonTables+" in it, and leave them (default: start a private postgres)")
	force := f.Bool("force", false, "run the lessons even in a database that holds ratelab's live tables (ratelab_fixed, ratelab_state)")
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
		if *mysqlDSN == "" && !sqlserver.MariaDBAvailable() {
			missing = append(missing, "MariaDB: "+sqlserver.MariaDBInstallHint)
		}
		if *pgURL == "" && !sqlserver.PostgresAvailable() {
			missing = append(missing, "PostgreSQL: "+sqlserver.PostgresInstallHint)
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
	app := harness.App{Limit: f.limit, Window: f.window, Prefix: lessonPrefix}
	var err error
	if app.Now, err = f.atOrZero(); err != nil {
		return 0, err
	}
	progress := progressTo(stderr, *stable)
	dsns := map[string]string{"mysql": *mysqlDSN, "postgres": *pgURL}
	dbs := []struct {
		store, dialect string
		start          func(...string) (*sqlserver.Server, error)
	}{{"mysql", "mariadb", sqlserver.StartMariaDB}, {"postgres", "postgres", sqlserver.StartPostgres}}
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
		conn, err := sql.Open(databaselock.DriverName(db.dialect), dsns[db.store])
		if err != nil {
			return 0, usagef("-%s: %v", db.store, redact.Err(err, dsns[db.store]))
		}
		defer conn.Close()
		live, err := harness.App{Store: db.store, DSN: dsns[db.store]}.HasTables(ctx) // the stores' default tables
		if err != nil || live && !*force {
			return 0, usagef("-%s: %v", db.store, cmp.Or(err, errLiveTables))
		}
		conns[db.store] = conn
	}
	for _, db := range dbs { // both databases checked before either is written
		a := app
		a.Store, a.DSN = db.store, dsns[db.store]
		if _, err := a.CheckDatabase(ctx); err != nil { // creates the lesson store's tables
			return 0, usagef("-%s: %v", db.store, err)
		}
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
			if _, err := conn.ExecContext(ctx, "DELETE FROM "+lessonPrefix+"fixed"); err != nil {
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

// The tables the lessons write: their own, and those of the store the
// two-hosts rows run on, under a prefix of their own.
const (
	lessonPrefix = "lesson_"
	lessonTables = "lesson_hits, lesson_locks, lesson_fixed and lesson_state"
)

var errLiveTables = errors.New("this database holds ratelab's live tables (ratelab_fixed or ratelab_state): " +
	"the lessons create and empty " + lessonTables + " in it, and leave them there; point the flag at a scratch database, or add -force")
