package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// dbOptions are ratelab db's flags besides the shared ones.
type dbOptions struct {
	mysql, postgres      string // the databases named, "" for a private server
	force, stable, check bool
	load                 httphost.Workload // -requests and -concurrency, once parsed
}

// dbFlags defines ratelab db's flags on a new flag set.
func dbFlags(stdout io.Writer) (*flags, *dbOptions) {
	f := newFlags("db", stdout)
	o := new(dbOptions)
	f.StringVar(&o.mysql, "mysql", "", "a MariaDB/MySQL database for the lessons, 'user:password@tcp(host:port)/db'; they create and empty "+
		"the tables "+lessonTables+" in it, and leave them (default: start a private mariadbd)")
	f.StringVar(&o.postgres, "postgres", "", "a PostgreSQL database for the lessons, postgres://user:password@host:port/db; they create and empty "+
		"the tables "+lessonTables+" in it, and leave them (default: start a private postgres)")
	f.BoolVar(&o.force, "force", false, "run the lessons even in a database that holds ratelab's live tables (ratelab_fixed, ratelab_state)")
	f.BoolVar(&o.stable, "stable", false, "leave out wall times, so that runs with -at print the same bytes")
	f.BoolVar(&o.check, "check", false, "only report whether the private servers can be started (exit 0) or what to install (exit 1)")
	f.workloadFlags(130).limitFlag().windowFlag().atFlag()
	f.IntVar(&f.workers, "workers", 2, "worker processes per host (> 0)")
	return f, o
}

// cmdDB runs the database lessons on MariaDB and PostgreSQL — private
// servers unless -mysql or -postgres names one — and the two-hosts model
// with files and with each database.
func cmdDB(args []string, stdout, stderr io.Writer) (int, error) {
	f, o := dbFlags(stdout)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if o.check {
		if err := onlyReads(f.FlagSet, "-check", "check", "mysql", "postgres"); err != nil {
			return 0, err
		}
		return checkDBServers(o, stderr), nil
	}
	o.load = f.load
	app := harness.App{Limit: f.limit, Window: f.window, Prefix: lessonPrefix}
	var err error
	if app.Now, err = f.atOrZero(); err != nil {
		return 0, err
	}
	progress := progressTo(stderr, o.stable)
	ctx := context.Background()
	dsns, stop, err := lessonDatabases(ctx, app, o, progress)
	defer stop()
	if err != nil {
		return 0, err
	}
	lessons, err := dbLessons(ctx, dsns, progress)
	if err != nil {
		return 0, err
	}
	claim.Table(stdout, "database lesson", lessons)
	if o.stable {
		fmt.Fprintln(stdout)
	}
	rep, err := twoHostsOnDatabases(ctx, app, f.workers, o, dsns, progress)
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, o.stable)
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, claim.All(lessons) && rep.Pass(), "every row shows what the demo claims"), nil
}

// lessonServer is one database of ratelab db: its store, the lessons'
// dialect, and what starts a private server.
type lessonServer struct {
	store   harness.StoreKind
	dialect string
	start   func(...string) (*sqlserver.Server, error)
}

func lessonServers() []lessonServer {
	return []lessonServer{{databaselock.MySQL, "mariadb", sqlserver.StartMariaDB}, {databaselock.Postgres, "postgres", sqlserver.StartPostgres}}
}

// checkDBServers is -check: exit 0 if every database the lessons need is
// named or can be started, else exit 1 saying what to install.
func checkDBServers(o *dbOptions, stderr io.Writer) int {
	var missing []string
	if o.mysql == "" && !sqlserver.MariaDBAvailable() {
		missing = append(missing, "MariaDB: "+sqlserver.MariaDBInstallHint)
	}
	if o.postgres == "" && !sqlserver.PostgresAvailable() {
		missing = append(missing, "PostgreSQL: "+sqlserver.PostgresInstallHint)
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "not installed: %s\n", strings.Join(missing, "; "))
		return exitFailure
	}
	return exitOK
}

// lessonDatabases returns the lessons' DSNs by store — the flags', or
// private servers' it starts — once each database is checked free of
// the live tables (unless -force) and holds the lesson store's tables.
// stop stops the private servers; it is never nil.
func lessonDatabases(ctx context.Context, app harness.App, o *dbOptions, progress io.Writer) (dsns map[harness.StoreKind]string, stop func(), err error) {
	dsns = map[harness.StoreKind]string{databaselock.MySQL: o.mysql, databaselock.Postgres: o.postgres}
	var servers []*sqlserver.Server
	stop = func() {
		for _, srv := range servers {
			srv.Stop()
		}
	}
	for _, db := range lessonServers() {
		if dsns[db.store] == "" {
			if progress != nil {
				fmt.Fprintf(progress, "starting a private %s server …\n", db.store)
			}
			srv, err := db.start()
			if err != nil {
				return nil, stop, err
			}
			servers = append(servers, srv)
			dsns[db.store] = srv.DSN
		}
		live, err := databaselock.HasTables(ctx, harness.App{Store: db.store, Server: dsns[db.store]}) // the stores' default tables
		if err != nil || live && !o.force {
			return nil, stop, usagef("-%s: %v", db.store, cmp.Or(err, errLiveTables))
		}
	}
	for _, db := range lessonServers() { // both databases checked before either is written
		a := app
		a.Store, a.Server = db.store, dsns[db.store]
		if _, err := databaselock.CheckDatabase(ctx, a); err != nil { // creates the lesson store's tables
			return nil, stop, usagef("-%s: %v", db.store, err)
		}
	}
	return dsns, stop, nil
}

// dbLessons runs the database lessons on each database.
func dbLessons(ctx context.Context, dsns map[harness.StoreKind]string, progress io.Writer) ([]claim.Claim, error) {
	var lessons []claim.Claim
	for _, db := range lessonServers() {
		if progress != nil {
			fmt.Fprintf(progress, "lessons on %s …\n", db.dialect)
		}
		rows, err := databaselock.Lessons(ctx, db.dialect, dsns[db.store])
		if err != nil {
			return nil, err
		}
		lessons = append(lessons, rows...)
	}
	return lessons, nil
}

// twoHostsOnDatabases runs the two-hosts model with files and with each
// database, the lesson store's states cleared before every row.
func twoHostsOnDatabases(ctx context.Context, app harness.App, workers int, o *dbOptions, dsns map[harness.StoreKind]string, progress io.Writer) (httphost.Report, error) {
	clearStates := func() error {
		for _, db := range lessonServers() {
			a := app
			a.Store, a.Server = db.store, dsns[db.store]
			if err := databaselock.ClearStates(ctx, a); err != nil {
				return err
			}
		}
		return nil
	}
	dir, cleanup, err := scratch("db")
	if err != nil {
		return httphost.Report{}, err
	}
	defer cleanup()
	return databaselock.DatabaseDemo(ctx, app, workers, o.load, dir, dsns, clearStates, progress)
}

// The tables the lessons write: their own, and those of the store the
// two-hosts rows run on, under a prefix of their own.
const (
	lessonPrefix = "lesson_"
	lessonTables = "lesson_hits, lesson_locks, lesson_fixed and lesson_state"
)

var errLiveTables = errors.New("this database holds ratelab's live tables (ratelab_fixed or ratelab_state): " +
	"the lessons create and empty " + lessonTables + " in it, and leave them there; point the flag at a scratch database, or add -force")
