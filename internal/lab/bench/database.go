//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/lab/sqlserver"
	"github.com/ratelab/ratelab/internal/lab/stress"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

// Database is one SQL store measured on a private server over loopback.
type Database struct {
	Name string // "MariaDB (mysql_store)"
	// Fixed and Log are one hit of the fixed window (one statement) and of
	// the sliding log (a row lock, the step in Go); Select1 is SELECT 1,
	// a round trip through the same driver and pool, taking turns with
	// them; the ratios are medians of the rounds' ratios.
	Fixed, Log, Select1              time.Duration
	FixedOverSelect1, LogOverSelect1 float64
	// Write is the cheapest write, an UPDATE of one counter in one row
	// committed on its own: the floor of any hit that counts.
	Write          time.Duration
	FixedOverWrite float64
	// HotProcs processes hit one key HotHits times each, released
	// together; HotExact reports whether the store counted every hit.
	HotProcs, HotHits int
	HotPerSecond      float64
	HotExact          bool
	// Relaxed is a server set not to flush its log at every commit.
	Relaxed bool
}

const roleDBHit = "bench/db-hit"

// Roles are the benchmark's child roles: a process hitting a database
// store.
func Roles() childproc.Roles { return childproc.Roles{roleDBHit: dbHitChild} }

// dbRule is the hot key's rule: never refused, so every hit writes.
var dbRule = ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour}

// sqlStore is a database store as the benchmark uses it.
type sqlStore struct {
	store ratelab.Store
	check func(ctx context.Context) error           // connect and create the tables, once
	exec  func(ctx context.Context, q string) error // one statement, one round trip
	close func()
}

func openSQLStore(kind, dsn string) (*sqlStore, error) {
	const timeout = 5 * time.Second // the hit, and the connection: see the stores' Options.Timeout
	switch kind {
	case "mysql":
		db, err := mysqlstore.OpenDB(dsn, timeout, 0)
		if err != nil {
			return nil, err
		}
		s, err := mysqlstore.New(db, mysqlstore.Options{FailPolicy: ratelab.FailClosed, Timeout: timeout})
		if err != nil {
			return nil, err
		}
		exec := func(ctx context.Context, q string) error { _, err := db.ExecContext(ctx, q); return err }
		return &sqlStore{s, s.CheckServer, exec, func() { db.Close() }}, nil
	case "postgres":
		pool, err := postgresstore.OpenPool(dsn, timeout, 0)
		if err != nil {
			return nil, err
		}
		s, err := postgresstore.New(pool, postgresstore.Options{FailPolicy: ratelab.FailClosed, Timeout: timeout})
		if err != nil {
			return nil, err
		}
		exec := func(ctx context.Context, q string) error { _, err := pool.Exec(ctx, q); return err }
		return &sqlStore{s, s.CheckServer, exec, pool.Close}, nil
	}
	return nil, fmt.Errorf("bench: unknown database store %q", kind)
}

// databases measures each SQL store whose server is installed.
func databases(o Options, say func(string, ...any)) ([]Database, error) {
	var out []Database
	for _, db := range []struct {
		kind, name string
		ok         bool
		start      func(args ...string) (*sqlserver.Server, error)
		args       []string // the server's
		params     string   // the connection's
		relaxed    bool
	}{
		{"mysql", "MariaDB (`mysql_store`), server default: a flush per commit", sqlserver.MariaDBAvailable(), sqlserver.StartMariaDB, nil, "", false},
		{"mysql", "MariaDB, innodb_flush_log_at_trx_commit=2", sqlserver.MariaDBAvailable(), sqlserver.StartMariaDB,
			[]string{"--innodb-flush-log-at-trx-commit=2"}, "", true},
		{"postgres", "PostgreSQL (`postgres_store`), its default: synchronous_commit=off", sqlserver.PostgresAvailable(), sqlserver.StartPostgres, nil, "", true},
		{"postgres", "PostgreSQL, synchronous_commit=on", sqlserver.PostgresAvailable(), sqlserver.StartPostgres, nil, "?synchronous_commit=on", false},
	} {
		if !db.ok {
			say("%s not installed: its row is left out", db.kind)
			continue
		}
		say("%s: %d rounds × %d hits, then %d processes on one key …", db.name, o.Rounds, o.PerRound/4, 8)
		srv, err := db.start(db.args...)
		if err != nil {
			return nil, err
		}
		d, err := measureDatabase(o, db.kind, srv.DSN+db.params)
		srv.Stop()
		if err != nil {
			return nil, err
		}
		d.Name, d.Relaxed = db.name, db.relaxed
		out = append(out, d)
	}
	return out, nil
}

func measureDatabase(o Options, kind, dsn string) (Database, error) {
	s, err := openSQLStore(kind, dsn)
	if err != nil {
		return Database{}, err
	}
	defer s.close()
	ctx, now := context.Background(), benchNow()
	if err := s.check(ctx); err != nil { // the hitters below find the tables made
		return Database{}, err
	}
	logRule := Rules()[2] // the sliding log, 30 a minute, stepping 2 s a hit
	if logRule.Algorithm != ratelab.SlidingLog {
		return Database{}, fmt.Errorf("bench: Rules()[2] is %s, not the sliding log", logRule.Algorithm)
	}
	for _, q := range []string{"DROP TABLE IF EXISTS bench_write", "CREATE TABLE bench_write (k int PRIMARY KEY, n bigint NOT NULL)",
		"INSERT INTO bench_write VALUES (1, 0)"} {
		if err := s.exec(ctx, q); err != nil {
			return Database{}, err
		}
	}
	at := now
	rounds, err := inTurns(o.Rounds, max(o.PerRound/4, 1),
		func() error { _, err := s.store.TakeAt(ctx, dbRule, "per-hit", now); return err },
		func() error { at = at.Add(Step); _, err := s.store.TakeAt(ctx, logRule, "per-hit", at); return err },
		func() error { return s.exec(ctx, "SELECT 1") },
		func() error { return s.exec(ctx, "UPDATE bench_write SET n = n + 1 WHERE k = 1") },
	)
	if err != nil {
		return Database{}, err
	}
	d := Database{
		Fixed:            time.Duration(medianOf(rounds, func(r []float64) float64 { return r[0] })),
		Log:              time.Duration(medianOf(rounds, func(r []float64) float64 { return r[1] })),
		Select1:          time.Duration(medianOf(rounds, func(r []float64) float64 { return r[2] })),
		FixedOverSelect1: medianOf(rounds, func(r []float64) float64 { return r[0] / r[2] }),
		LogOverSelect1:   medianOf(rounds, func(r []float64) float64 { return r[1] / r[2] }),
		Write:            time.Duration(medianOf(rounds, func(r []float64) float64 { return r[3] })),
		FixedOverWrite:   medianOf(rounds, func(r []float64) float64 { return r[0] / r[3] }),
		HotProcs:         8, HotHits: max(o.HitsEach/6, 1),
	}
	lines, wall, err := stress.Run(roleDBHit, d.HotProcs, "BENCH_DB_KIND="+kind, "BENCH_DB_DSN="+dsn, "BENCH_DB_HITS="+strconv.Itoa(d.HotHits))
	if err != nil {
		return Database{}, err
	}
	if len(lines) != d.HotProcs {
		return Database{}, fmt.Errorf("bench: %d results from %d processes", len(lines), d.HotProcs)
	}
	total := int64(d.HotProcs * d.HotHits)
	d.HotPerSecond = float64(total) / wall.Seconds()
	after, err := s.store.TakeAt(ctx, dbRule, "hot", now)
	if err != nil {
		return Database{}, err
	}
	d.HotExact = after.Remaining == dbRule.Limit-total-1
	return d, nil
}

// dbHitChild is one hitter of the hot key: ready, wait for go, hit,
// report.
func dbHitChild() error {
	hits, err := strconv.Atoi(os.Getenv("BENCH_DB_HITS"))
	if err != nil {
		return fmt.Errorf("BENCH_DB_HITS: %w", err)
	}
	s, err := openSQLStore(os.Getenv("BENCH_DB_KIND"), os.Getenv("BENCH_DB_DSN"))
	if err != nil {
		return err
	}
	defer s.close()
	ctx, now := context.Background(), benchNow()
	if err := s.exec(ctx, "SELECT 1"); err != nil { // connected before the barrier
		return err
	}
	return stress.Hit(hits, func() error { return stress.Counted(s.store.TakeAt(ctx, dbRule, "hot", now)) })
}

// databaseMarkdown writes the databases' section of performance.md.
func databaseMarkdown(w io.Writer, o Options, dbs []Database) {
	if len(dbs) == 0 {
		return
	}
	fmt.Fprintf(w, "## Databases\n\nEach store on a private server of its own over loopback, with every commit flushed to disk and with the flush left to the server's log writer; median of %d rounds of %d hits, the four variants taking turns. SELECT 1 is one round trip through the same driver and pool; the one-row UPDATE (`SET n = n + 1`, committed on its own) is the cheapest write, the floor of any hit that counts. A fixed-window hit is one statement; a sliding-log hit is a row lock with the step in Go (MariaDB: BEGIN, upsert, SELECT … FOR UPDATE, UPDATE, COMMIT; PostgreSQL: two round trips).\n\n", o.Rounds, max(o.PerRound/4, 1))
	fmt.Fprintf(w, "| server | SELECT 1 | one-row UPDATE | fixed window | ÷ SELECT 1 | ÷ UPDATE | sliding log | ÷ SELECT 1 | %d processes, one key | exact |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n", dbs[0].HotProcs)
	for _, d := range dbs {
		exact := "yes"
		if !d.HotExact {
			exact = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f × | %.2f × | %s | %.2f × | %.0f hits/s | %s |\n", d.Name, us(d.Select1), us(d.Write), us(d.Fixed),
			d.FixedOverSelect1, d.FixedOverWrite, us(d.Log), d.LogOverSelect1, d.HotPerSecond, exact)
	}
	fmt.Fprintln(w)
}
