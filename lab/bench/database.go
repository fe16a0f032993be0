//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/stress"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	postgresstore "github.com/ratelab/ratelab/postgres_store"
)

// Database is one SQL store measured on a private server over loopback.
type Database struct {
	Name string // "MariaDB (mysql_store)"
	// MariaDB says the server is MariaDB: the targets judge its rows.
	MariaDB bool
	// Fixed and Log are one hit of the fixed window (one statement) and of
	// the sliding log (a row lock, the step in Go); Select1 is SELECT 1,
	// a round trip through the same driver and pool, and Write the
	// cheapest write, an UPDATE of one counter in one row committed on
	// its own — the floor of any hit that counts — all four taking turns.
	Fixed, Log, Select1, Write time.Duration
	// FixedOverWrite and LogOverWrite are the medians of the rounds'
	// ratios; FixedSpread is the least and the greatest of FixedOverWrite's.
	FixedOverWrite, LogOverWrite float64
	FixedSpread                  [2]float64
	// Trips are the round trips of one hit, by algorithm in
	// ratelab.Algorithms' order, counted by a proxy over TripHits hits.
	Trips    []float64
	TripHits int
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
var dbRule = ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour}.Normalized()

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
		s, err := mysqlstore.New(db, mysqlstore.Options{Timeout: timeout})
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
		s, err := postgresstore.New(pool, postgresstore.Options{Timeout: timeout})
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
		d, err := measureDatabase(o, db.kind, srv.DSN+db.params, srv.Addr)
		srv.Stop()
		if err != nil {
			return nil, err
		}
		d.Name, d.Relaxed, d.MariaDB = db.name, db.relaxed, db.kind == "mysql"
		out = append(out, d)
	}
	return out, nil
}

// measureDatabase measures the store of kind on the server at dsn, whose
// address addr stands in dsn: per hit, in round trips, on one hot key.
func measureDatabase(o Options, kind, dsn, addr string) (Database, error) {
	s, err := openSQLStore(kind, dsn)
	if err != nil {
		return Database{}, err
	}
	defer s.close()
	if err := s.check(context.Background()); err != nil { // the hitters below find the tables made
		return Database{}, err
	}
	d, err := perHitDatabase(o, s)
	if err != nil {
		return Database{}, err
	}
	if d.Trips, err = roundTrips(kind, dsn, addr, d.TripHits); err != nil {
		return Database{}, err
	}
	return d, hotKey(o, kind, dsn, s, &d)
}

// perHitDatabase measures a hit of the fixed window and of the sliding
// log, SELECT 1 and a one-row UPDATE, in turns.
func perHitDatabase(o Options, s *sqlStore) (Database, error) {
	ctx, now := context.Background(), benchNow()
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
	col := func(i int) time.Duration {
		return time.Duration(medianOf(rounds, func(r []float64) float64 { return r[i] }))
	}
	fixedOverWrite := func(r []float64) float64 { return r[0] / r[3] }
	return Database{
		Fixed: col(0), Log: col(1), Select1: col(2), Write: col(3),
		FixedOverWrite: medianOf(rounds, fixedOverWrite),
		LogOverWrite:   medianOf(rounds, func(r []float64) float64 { return r[1] / r[3] }),
		FixedSpread:    spreadOf(rounds, fixedOverWrite),
		TripHits:       20, HotProcs: 8, HotHits: max(o.HitsEach/6, 1),
	}, nil
}

// spreadOf returns the least and the greatest over rounds of f(round).
func spreadOf(rounds [][]float64, f func(round []float64) float64) [2]float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rounds {
		lo, hi = min(lo, f(r)), max(hi, f(r))
	}
	return [2]float64{lo, hi}
}

// roundTrips counts the round trips of a hit under each algorithm, through
// a proxy in front of the server at addr: hits hits each, after one that
// creates the row and the connection.
func roundTrips(kind, dsn, addr string, hits int) ([]float64, error) {
	p, err := sqlserver.CountTrips(addr)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	s, err := openSQLStore(kind, strings.Replace(dsn, addr, p.Addr, 1))
	if err != nil {
		return nil, err
	}
	defer s.close()
	ctx := context.Background()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var trips []float64
	for _, r := range Rules() {
		at := benchNow()
		hit := func() error { at = at.Add(Step); return writingHit(s.store.TakeAt(ctx, r, "trips", at)) }
		if err := hit(); err != nil { // the row, and a connection
			return nil, err
		}
		before := p.Count()
		for range hits {
			if err := hit(); err != nil {
				return nil, err
			}
		}
		trips = append(trips, float64(p.Count()-before)/float64(hits))
	}
	return trips, nil
}

// hotKey has d.HotProcs processes hit one key d.HotHits times each, all
// released together, and checks that s counted every hit.
func hotKey(o Options, kind, dsn string, s *sqlStore, d *Database) error {
	lines, wall, err := stress.Run(roleDBHit, d.HotProcs, "BENCH_DB_KIND="+kind, "BENCH_DB_DSN="+dsn, "BENCH_DB_HITS="+strconv.Itoa(d.HotHits))
	if err != nil {
		return err
	}
	if len(lines) != d.HotProcs {
		return fmt.Errorf("bench: %d results from %d processes", len(lines), d.HotProcs)
	}
	total := int64(d.HotProcs * d.HotHits)
	d.HotPerSecond = float64(total) / wall.Seconds()
	after, err := s.store.TakeAt(context.Background(), dbRule, "hot", benchNow())
	if err != nil {
		return err
	}
	d.HotExact = after.Remaining == dbRule.Limit-total-1
	return nil
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

// databaseTargets judges the databases against issue 23's targets: on
// MariaDB, a fixed-window hit within 1.2 × a one-row UPDATE on the same
// server and durability; on every server, the other algorithms in at most
// two round trips; and every hit of the hot key counted.
func databaseTargets(dbs []Database) []Target {
	var ts []Target
	for _, d := range dbs {
		if d.MariaDB {
			ts = append(ts, Target{What: d.Name + ", fixed window ≤ 1.2 × a one-row UPDATE per hit", Met: d.FixedOverWrite <= 1.2,
				Measured: d.FixedOverWrite, Min: d.FixedSpread[0], Max: d.FixedSpread[1]})
		}
		locked := d.Trips[1:] // the algorithms after the fixed window
		most, least := slices.Max(locked), slices.Min(locked)
		ts = append(ts, Target{What: d.Name + ", sliding counter, sliding log and GCRA in ≤ 2 round trips per hit", Met: most <= 2,
			Measured: most, Min: least, Max: most})
		ts = append(ts, Target{What: fmt.Sprintf("%s, %d processes on one key count exactly (%.0f hits/s)", d.Name, d.HotProcs, d.HotPerSecond), Met: d.HotExact})
	}
	return ts
}

// databaseMarkdown writes the databases' section of performance.md.
func databaseMarkdown(w io.Writer, o Options, dbs []Database) {
	if len(dbs) == 0 {
		return
	}
	fmt.Fprintf(w, "## Databases\n\nEach store on a private server of its own over loopback, with every commit flushed to disk and with the flush left to the server's log writer; median of %d rounds of %d hits, the four variants taking turns. SELECT 1 is one round trip through the same driver and pool, writing nothing; the one-row UPDATE (`SET n = n + 1`, committed on its own) is the cheapest write, the floor of any hit that counts, and the ratios are to it (the fixed window's spread is the least and the greatest round's). A fixed-window hit is one statement (on MariaDB a prepared UPDATE of the live row, and the upsert only when the row is new or its window over); the other algorithms take the row's lock and run the step in Go: on MariaDB from 10.5 and on PostgreSQL in two round trips (MariaDB: a block that begins the transaction and locks the row with INSERT … RETURNING, then a block that updates and commits; MySQL takes five). The round trips are counted by a proxy in front of the server, over %d hits per algorithm.\n\n", o.Rounds, max(o.PerRound/4, 1), dbs[0].TripHits)
	fmt.Fprintf(w, "| server | SELECT 1 | one-row UPDATE | fixed window | ÷ UPDATE | sliding log | ÷ UPDATE | round trips: fixed, sliding, log, gcra | %d processes, one key | exact |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |\n", dbs[0].HotProcs)
	for _, d := range dbs {
		exact := "yes"
		if !d.HotExact {
			exact = "**no**"
		}
		trips := make([]string, len(d.Trips))
		for i, n := range d.Trips {
			trips[i] = strconv.FormatFloat(n, 'f', -1, 64)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.2f × (%.2f–%.2f) | %s | %.2f × | %s | %.0f hits/s | %s |\n", d.Name, us(d.Select1), us(d.Write), us(d.Fixed),
			d.FixedOverWrite, d.FixedSpread[0], d.FixedSpread[1], us(d.Log), d.LogOverWrite, strings.Join(trips, ", "), d.HotPerSecond, exact)
	}
	fmt.Fprintln(w)
}
