package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// checkClaims runs the table's rows runs times and prints the table: of
// its one run, or, run more than once, one row per claim with the runs
// whose verdict was the one claimed. Every run counts: a table run that
// differs does not end the others. A signal (interrupted) ends it before
// the next row.
func checkClaims(stdout, stderr io.Writer, skipped []string, table []checkRow, runs int, interrupted func() bool) (int, error) {
	servers := new(privateServers)
	defer servers.stop()
	var rows []claim.Claim
	asClaimed := make([]int, len(table))
	passed := 0
	for run := range runs {
		rows = rows[:0]
		for i, r := range table {
			if interrupted() {
				return 0, errInterrupted
			}
			c, err := checkRowOnce(stderr, r, servers)
			if err != nil {
				return 0, err
			}
			if c.Pass() {
				asClaimed[i]++
			}
			rows = append(rows, c)
		}
		verdict := "a verdict not as claimed"
		if claim.All(rows) {
			passed, verdict = passed+1, "every verdict as claimed"
		}
		if runs > 1 {
			fmt.Fprintf(stderr, "check: table run %d of %d: %s\n", run+1, runs, verdict)
		}
	}
	if runs > 1 {
		rows = rows[:0]
		for i, r := range table {
			rows = append(rows, claim.Claim{Case: r.name, Expected: fmt.Sprintf("%s in %d of %d runs", r.want, runs, runs),
				Observed: fmt.Sprintf("%s in %d of %d runs", r.want, asClaimed[i], runs)})
		}
	}
	claim.Table(stdout, "history", rows)
	if runs > 1 {
		fmt.Fprintf(stdout, "\nthe table ran %d times; every verdict was the one claimed in %d of them\n", runs, passed)
	}
	for _, line := range skipped {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, passed == runs, "every history's verdict is the one claimed"), nil
}

// checkRowOnce runs one row of the table and returns its claim.
func checkRowOnce(stderr io.Writer, r checkRow, servers *privateServers) (claim.Claim, error) {
	start := time.Now()
	r.run.servers = servers
	v, err := r.run.run(io.Discard)
	if err != nil {
		return claim.Claim{}, fmt.Errorf("check %s: %w", r.name, err)
	}
	got := "linearizable"
	if !v.Linearizable {
		got = "not linearizable"
	}
	fmt.Fprintf(stderr, "check: %s: %s (run %v, checker %v)\n", r.name, got, time.Since(start).Round(time.Millisecond), v.Took.Round(time.Millisecond))
	return claim.Claim{Case: r.name, Expected: r.want, Observed: got, Detail: v.Counts()}, nil
}

// absent returns, for each store whose rows need a server that is not
// installed, the line that says they were skipped and how to install it;
// each server is looked for once.
func absent() map[harness.StoreKind]string {
	lines := map[harness.StoreKind]string{}
	for _, s := range []struct {
		store harness.StoreKind
		found func() bool
		hint  string
	}{
		{"redis", redisserver.Available, "redis-server not found; install it with " + redisserver.InstallHint},
		{"mysql", sqlserver.MariaDBAvailable, "mariadbd not found; install it with " + sqlserver.MariaDBInstallHint},
		{"postgres", sqlserver.PostgresAvailable, "postgres not found; install it with " + sqlserver.PostgresInstallHint},
	} {
		if !s.found() {
			lines[s.store] = fmt.Sprintf("(the %s rows were skipped: %s)", s.store, s.hint)
		}
	}
	return lines
}

// tableRows are the rows of the table whose names match pattern (every
// row if it is empty) and whose server is installed, and a line for each
// server whose rows it left out, saying how to install it. Matching no
// row is a usage error; matching only rows it left out, an error.
func tableRows(pattern string) (rows []checkRow, skipped []string, err error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, nil, usagef("-rows: %v", err)
	}
	matched, gone := 0, absent()
	for _, r := range checkTable() {
		if !re.MatchString(r.name) {
			continue
		}
		matched++
		if line, ok := gone[r.run.store]; ok {
			if !slices.Contains(skipped, line) {
				skipped = append(skipped, line)
			}
			continue
		}
		rows = append(rows, r)
	}
	if len(pattern) > 80 {
		pattern = pattern[:80] + "…"
	}
	switch {
	case matched == 0:
		return nil, nil, usagef("-rows %q matches no row of the table", pattern)
	case len(rows) == 0:
		return nil, nil, fmt.Errorf("-rows %q: every row it matches needs a server that is not installed: %s", pattern, strings.Join(skipped, " "))
	}
	return rows, skipped, nil
}

// checkRow is one claim of ratelab check.
type checkRow struct {
	name, want string
	run        checkRun
}

// checkTable is the table of claims, the rows of every server included
// (tableRows leaves out those whose server is not installed). Every
// history starts from no state, allows half its hits and refuses the
// rest.
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
		checkRow{"redis, pool", yes, run("redis", "pool", ratelab.FixedWindow, 0)},
		checkRow{"redis, cgi, gcra", yes, run("redis", "cgi", ratelab.GCRA, 0)},
		checkRow{"redis, failover, replication asynchronous", no, checkRun{store: "redis", failover: true}},
		checkRow{"redis, failover, WAIT for 1 replica", yes, checkRun{store: "redis", failover: true, redisWait: 1}},
		checkRow{"redis cluster, the key's slot moving", yes, checkRun{store: "redis", move: true, clients: 8, hits: 12}},
		checkRow{"mysql, pool, sliding", yes, run("mysql", "pool", ratelab.SlidingCounter, 0)},
		checkRow{"mysql, read, then write", no, checkRun{store: "mysql", mistake: databaselock.ReadThenWrite}},
		checkRow{"mysql, one upsert, reset_at assigned first", no, checkRun{store: "mysql", mistake: databaselock.ResetFirst}},
		checkRow{"postgres, cgi, log", yes, run("postgres", "cgi", ratelab.SlidingLog, 0)},
		checkRow{"postgres, read, then write", no, checkRun{store: "postgres", mistake: databaselock.ReadThenWrite}},
		checkRow{"postgres, one upsert, reset_at assigned first", yes, checkRun{store: "postgres", mistake: databaselock.ResetFirst}},
	)
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
	for _, store := range []harness.StoreKind{"redis", "mysql", "postgres"} {
		rows = append(rows, checkRow{fmt.Sprintf("%s, pool, fixed, 200 ms windows", store), "linearizable", short(store, "pool", ratelab.FixedWindow)})
	}
	return rows
}
