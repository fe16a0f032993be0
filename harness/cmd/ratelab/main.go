// Command ratelab runs the repository's demonstrations and lets you poke
// at a rate limiter by hand: ratelab help lists its commands, ratelab
// COMMAND -h a command's flags. The commands, one file per family:
//
//   - demo, serve, cgi (cmd_serve.go): the endpoint under the execution
//     models, served by hand, and as a CGI program for a real web server;
//   - hit, reset, inspect, sweep (cmd_state.go): the file store's state by
//     hand;
//   - race, schedules, boundary, redis, bench (cmd_lessons.go): the
//     lessons and the measurements;
//   - db (cmd_db.go): the database lock, on private MariaDB and
//     PostgreSQL servers;
//   - check (cmd_check.go): every hit of a run recorded, and the history
//     checked for linearizability.
//
// DIR is the base directory; state lives in DIR/rate-limits. Exit status:
// 0 success (for hit: allowed), 3 throttled (hit only), 2 bad usage, 1
// failure — including a demo that observed something other than it claims.
//
// The binary is also every child process the demos and serve start:
// childproc.RunIfChild runs first in main, with every package's roles.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/lab/bench"
	"github.com/ratelab/ratelab/lab/stress"
	mysqlstore "github.com/ratelab/ratelab/mysql_store"
	racetests "github.com/ratelab/ratelab/race_tests"
	redisstore "github.com/ratelab/ratelab/redis_store"
	boundaryreport "github.com/ratelab/ratelab/window_boundary/report"
)

const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitThrottled = 3
)

func main() {
	// go-redis and the MySQL driver have one logger per process: their
	// lines (a dial that failed) become records of the program's log, in
	// the format of the workers' records (a worker sets its own), so that
	// an outage reads alike.
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	redis.SetLogger(redisstore.NewGoRedisLog(logger))
	mysql.SetLogger(mysqlstore.NewDriverLog(logger))
	childproc.RunIfChild(httphost.Roles(), racetests.Roles(), boundaryreport.Roles(), stress.Roles(), databaselock.Roles(), bench.Roles())
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is one line of the command table: its name, its arguments as
// the usage shows them, a line of help, and what runs it. In args, a flag
// in brackets without a value, [-limit], is shown with its default
// (usageLine): the defaults are written once, where the flags are defined;
// so are the choices {stores}, {algorithms} and {policies}, where the
// harness, the algorithms and the fail policies are.
type command struct {
	name, args, help string
	run              func(args []string, stdout, stderr io.Writer) (int, error)
}

// commands is the command table, in the order usage lists it.
func commands() []command {
	return []command{
		{"demo", "-store memory|file | -outage open|local [-requests] [-limit] [-window] [-workers] [-concurrency] [-at RFC3339] [-stable]",
			"the endpoint under single, pool and cgi: where 429 appears", cmdDemo},
		{"serve", "-model cgi|pool|single|two-hosts -store {stores} [-addr] [-limit] [-window] [-workers] [-cgi-procs] [-dir DIR] [-at RFC3339] [-algorithm {algorithms}] [-burst N] [-fail {policies}] [-redis URL] [-redis-wait N] [-redis-wait-timeout] [-redis-allow-eviction] [-mysql DSN] [-postgres URL] [-trusted-proxies CIDR,…] [-forwarded-header NAME]",
			"serve the endpoint to curl, until Ctrl-C", cmdServe},
		{"cgi", "-store {stores} [-dir DIR] [-redis URL] [-redis-wait N] [-redis-wait-timeout] [-mysql DSN] [-postgres URL] [-limit] [-window] [-algorithm {algorithms}] [-burst N] [-fail {policies}] [-trusted-proxies CIDR,…] [-forwarded-header NAME]",
			"the endpoint as a CGI program, for a web server's cgi-bin", cmdCGI},
		{"hit", "-dir DIR -key KEY [-rule] [-limit] [-window] [-at RFC3339] [-fail {policies}] [-wait DURATION] [-algorithm {algorithms}] [-burst N] [-refusals default|count|ignore]",
			"take one hit in the file store and print the decision", cmdHit},
		{"reset", "-dir DIR -key KEY [-rule] [-algorithm {algorithms}]",
			"forget one key of one rule: unblock a client", cmdReset},
		{"inspect", "-dir DIR [-at RFC3339]", "show every state file, changing none", cmdInspect},
		{"sweep", "-dir DIR [-at RFC3339]", "remove the state files whose state is over", cmdSweep},
		{"race", "[-procs] [-hits] [-stable] [-figures DIR]", "lost updates, torn reads and lock-file pitfalls, across processes", cmdRace},
		{"schedules", "", "two processes' system calls in every order the kernel allows: which lose a hit", cmdSchedules},
		{"boundary", "[-limit] [-window] [-burst] [-seed] [-processes] [-svg FILE] [-weight-svg FILE]", "the 2 × limit burst at a window's edge, four algorithms", cmdBoundary},
		{"bench", "[-o FILE] [-quick]", "per-hit costs and cross-process throughput", cmdBench},
		{"redis", "[-redis URL] [-requests] [-limit] [-window] [-workers] [-concurrency] [-at RFC3339] [-stable] [-svg FILE]",
			"beyond one host: files against Redis, and two Redis pitfalls", cmdRedis},
		{"check", "[-store {stores}] [-counter lock-free|flock] [-mistake read-then-write|reset-first] [-model single|pool|cgi|two-hosts] [-algorithm {algorithms}] [-clients] [-hits] [-workers] [-window] [-speed N] [-runs] [-rows REGEXP] [-fault none|kill|stop|failover|move] [-redis-wait N] [-html FILE] [-svg FILE]",
			"record every hit of a run and check the history for linearizability", cmdCheck},
		{"db", "[-check] [-mysql DSN] [-postgres URL] [-requests] [-limit] [-window] [-workers] [-concurrency] [-at RFC3339] [-stable] [-force]",
			"the database lock: lost updates in SQL, lock rows, two hosts on one database", cmdDB},
	}
}

// usage is the usage text, made from the command table.
func usage() string {
	width := 0 // of the longest name, so that what follows lines up
	for _, c := range commands() {
		width = max(width, len(c.name))
	}
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  ratelab %-*s %s\n", width, c.name, c.usageLine())
	}
	b.WriteString("\ncommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-*s %s\n", width, c.name, c.help)
	}
	return b.String()
}

// usageLine is c's arguments as usage shows them: each [-name] in args
// is filled in from the flag c defines, [-name DEFAULT] for a flag that
// takes a value, [-name=false] for a bool that defaults to true.
func (c command) usageLine() string {
	set := c.flags()
	args := strings.NewReplacer("{stores}", join(harness.Kinds()), "{algorithms}", join(ratelab.Algorithms()),
		"{policies}", join(ratelab.FailPolicies())).Replace(c.args)
	return regexp.MustCompile(`\[-([a-z][a-z-]*)\]`).ReplaceAllStringFunc(args, func(s string) string {
		fl := set.Lookup(s[2 : len(s)-1])
		switch {
		case fl == nil:
			return s // not a flag of c: the usage test says so
		case isBool(fl) && fl.DefValue == "true":
			return "[-" + fl.Name + "=false]"
		case isBool(fl), fl.DefValue == "", fl.DefValue == "0", fl.DefValue == "0s":
			return s // no default to show: a placeholder belongs in args
		}
		return "[-" + fl.Name + " " + defaultText(fl) + "]"
	})
}

// join is xs as a usage line names its choices: a|b|c.
func join[T any](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, "|")
}

// flags returns the flags c defines, without running it: c is given -h
// and a stdout that records its flag set when it parses (flagRecorder).
func (c command) flags() *flag.FlagSet {
	rec := &flagRecorder{}
	c.run([]string{"-h"}, rec, io.Discard)
	if rec.set == nil {
		return flag.NewFlagSet(c.name, flag.ContinueOnError)
	}
	return rec.set
}

// usageError is bad input: one line on stderr, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage())
		return exitOK
	}
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
		if c.name != args[0] {
			continue
		}
		code, err := c.run(args[1:], stdout, stderr)
		var ue usageError
		switch {
		case errors.Is(err, flag.ErrHelp):
			return exitOK
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "ratelab %s: %s\n", args[0], ue.msg)
			return exitUsage
		case err != nil:
			fmt.Fprintf(stderr, "ratelab %s: %v\n", args[0], err)
			return exitFailure
		}
		return code
	}
	fmt.Fprintf(stderr, "ratelab: unknown command %q: use %s\n", args[0], strings.Join(names, ", "))
	return exitUsage
}

func cliLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

func printHarnessReport(stdout io.Writer, rep httphost.Report, stable bool) {
	if stable {
		rep.PrintStable(stdout)
		return
	}
	fmt.Fprintln(stdout)
	rep.Print(stdout)
}
