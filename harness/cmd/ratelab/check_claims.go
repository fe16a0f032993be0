package main

import (
	"fmt"
	"io"
	"time"

	"github.com/ratelab/ratelab"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// checkClaims runs the table of claims and prints it.
func checkClaims(stdout, stderr io.Writer) (int, error) {
	var rows []claim.Claim
	servers := new(privateServers)
	defer servers.stop()
	for _, r := range checkTable() {
		start := time.Now()
		r.run.servers = servers
		v, err := r.run.run(io.Discard)
		if err != nil {
			return 0, fmt.Errorf("check %s: %w", r.name, err)
		}
		got := "linearizable"
		if !v.Linearizable {
			got = "not linearizable"
		}
		rows = append(rows, claim.Claim{Case: r.name, Expected: r.want, Observed: got,
			Detail: v.Counts()})
		fmt.Fprintf(stderr, "check: %s: %s (run %v, checker %v)\n", r.name, got, time.Since(start).Round(time.Millisecond), v.Took.Round(time.Millisecond))
	}
	claim.Table(stdout, "history", rows)
	for _, missing := range []struct {
		rows, hint string
		found      bool
	}{
		{"redis", "redis-server not found; install it with " + redisserver.InstallHint, redisserver.Available()},
		{"mysql", "mariadbd not found; install it with " + sqlserver.MariaDBInstallHint, sqlserver.MariaDBAvailable()},
		{"postgres", "postgres not found; install it with " + sqlserver.PostgresInstallHint, sqlserver.PostgresAvailable()},
	} {
		if !missing.found {
			fmt.Fprintf(stdout, "(the %s rows were skipped: %s)\n", missing.rows, missing.hint)
		}
	}
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, claim.All(rows), "every history's verdict is the one claimed"), nil
}

// checkRow is one claim of ratelab check.
type checkRow struct {
	name, want string
	run        checkRun
}

// checkTable is the table of claims. Every history starts from no state,
// allows half its hits and refuses the rest.
func checkTable() []checkRow {
	const yes, no = "linearizable", "not linearizable"
	run := func(store harness.StoreKind, model string, alg ratelab.Algorithm, kills int) checkRun {
		return checkRun{store: store, model: model, algorithm: alg, clients: 8, hits: 10, workers: 4, kills: kills}
	}
	stopped := func(model string) checkRun {
		c := run("file", model, ratelab.FixedWindow, 0)
		c.stops = 2
		return c
	}
	rows := []checkRow{
		{"memory, single", yes, run("memory", "single", ratelab.FixedWindow, 0)},
		{"memory, pool", no, run("memory", "pool", ratelab.FixedWindow, 0)},
		{"memory, cgi", no, run("memory", "cgi", ratelab.FixedWindow, 0)},
	}
	for _, alg := range []ratelab.Algorithm{ratelab.FixedWindow, ratelab.SlidingCounter, ratelab.SlidingLog, ratelab.GCRA} {
		for _, model := range []string{"single", "pool", "cgi"} {
			rows = append(rows, checkRow{fmt.Sprintf("file, %s, %s", model, alg), yes, run("file", model, alg, 0)})
		}
	}
	rows = append(append(rows, shortWindowRows()...),
		checkRow{"file, pool, 2 workers killed mid-hit", yes, run("file", "pool", ratelab.FixedWindow, 2)},
		checkRow{"file, cgi, 2 processes killed mid-hit", yes, run("file", "cgi", ratelab.FixedWindow, 2)},
		checkRow{"file, pool, 2 workers stopped mid-hit", yes, stopped("pool")},
		checkRow{"file, cgi, 2 processes stopped mid-hit", yes, stopped("cgi")},
		checkRow{"file, two hosts, a directory each", no, run("file", "two-hosts", ratelab.FixedWindow, 0)},
		checkRow{"read-modify-write without a lock", no, checkRun{counter: "lock-free", clients: 8, hits: 10}},
		checkRow{"read-modify-write under flock", yes, checkRun{counter: "flock", clients: 8, hits: 10}},
	)
	if redisserver.Available() {
		rows = append(rows, checkRow{"redis, pool", yes, run("redis", "pool", ratelab.FixedWindow, 0)},
			checkRow{"redis, cgi, gcra", yes, run("redis", "cgi", ratelab.GCRA, 0)},
			checkRow{"redis, failover, replication asynchronous", no, checkRun{store: "redis", failover: true}},
			checkRow{"redis, failover, WAIT for 1 replica", yes, checkRun{store: "redis", failover: true, redisWait: 1}},
			checkRow{"redis cluster, the key's slot moving", yes, checkRun{store: "redis", move: true, clients: 8, hits: 12}})
	}
	if sqlserver.MariaDBAvailable() {
		rows = append(rows, checkRow{"mysql, pool, sliding", yes, run("mysql", "pool", ratelab.SlidingCounter, 0)},
			checkRow{"mysql, read, then write", no, checkRun{store: "mysql", mistake: databaselock.ReadThenWrite}},
			checkRow{"mysql, one upsert, reset_at assigned first", no, checkRun{store: "mysql", mistake: databaselock.ResetFirst}})
	}
	if sqlserver.PostgresAvailable() {
		rows = append(rows, checkRow{"postgres, cgi, log", yes, run("postgres", "cgi", ratelab.SlidingLog, 0)},
			checkRow{"postgres, read, then write", no, checkRun{store: "postgres", mistake: databaselock.ReadThenWrite}},
			checkRow{"postgres, one upsert, reset_at assigned first", yes, checkRun{store: "postgres", mistake: databaselock.ResetFirst}})
	}
	return rows
}

// shortWindowRows are the rows whose windows pass during the run: a
// window of 1 s on the history's clock run 5 times as fast, 200 ms, each
// run across 4 of them or more, a quarter of the hits allowed.
func shortWindowRows() []checkRow {
	short := func(store harness.StoreKind, model string, alg ratelab.Algorithm) checkRun {
		return checkRun{store: store, model: model, algorithm: alg, clients: 8, hits: 10, workers: 4, window: time.Second, speed: 5}
	}
	rows := []checkRow{{"memory, pool, 200 ms windows", "not linearizable", short("memory", "pool", ratelab.FixedWindow)}}
	for _, alg := range []ratelab.Algorithm{ratelab.FixedWindow, ratelab.SlidingCounter, ratelab.SlidingLog, ratelab.GCRA} {
		for _, model := range []string{"pool", "cgi"} {
			rows = append(rows, checkRow{fmt.Sprintf("file, %s, %s, 200 ms windows", model, alg), "linearizable", short("file", model, alg)})
		}
	}
	// The servers' own fixed-window steps, a Lua script and one SQL
	// statement each, across their resets.
	for _, server := range []struct {
		store harness.StoreKind
		found bool
	}{{"redis", redisserver.Available()}, {"mysql", sqlserver.MariaDBAvailable()}, {"postgres", sqlserver.PostgresAvailable()}} {
		if server.found {
			rows = append(rows, checkRow{fmt.Sprintf("%s, pool, fixed, 200 ms windows", server.store), "linearizable", short(server.store, "pool", ratelab.FixedWindow)})
		}
	}
	return rows
}
