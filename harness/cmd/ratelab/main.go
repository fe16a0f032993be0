// Command ratelab runs the repository's demonstrations and lets you poke
// at a rate limiter by hand.
//
//	ratelab demo    -store memory|file [-requests 40] [-limit 30] [-window 1h] [-workers 4] [-concurrency 8] [-at RFC3339] [-stable]
//	ratelab serve   -model cgi|pool|single|two-hosts -store memory|file|redis [-addr 127.0.0.1:8080] [-limit 30] [-window 1h] [-workers 4] [-dir DIR] [-at RFC3339] [-algorithm fixed|sliding|log|gcra] [-burst N] [-fail open|closed] [-redis URL]
//	ratelab cgi     -store memory|file|redis [-dir DIR] [-redis URL] [-limit 30] [-window 1h] [-algorithm fixed|sliding|log|gcra] [-burst N] [-fail open|closed]
//	ratelab hit     -dir DIR -key KEY [-rule demo-start] [-limit 30] [-window 1h] [-at RFC3339] [-fail open|closed] [-algorithm fixed|sliding|log|gcra] [-burst N]
//	ratelab inspect -dir DIR [-at RFC3339]
//	ratelab sweep   -dir DIR [-at RFC3339]
//	ratelab race    [-procs 8] [-hits 500] [-stable]
//	ratelab boundary [-limit 30] [-window 1h] [-burst 5] [-seed 1] [-processes] [-svg FILE]
//	ratelab bench   [-o FILE] [-quick]
//	ratelab redis   [-redis URL] [-requests 130] [-limit 30] [-window 1h] [-workers 2] [-concurrency 8] [-at RFC3339] [-stable]
//
// DIR is the base directory; state lives in DIR/rate-limits. Exit status:
// 0 success (for hit: allowed), 3 throttled (hit only), 2 bad usage, 1
// failure — including a demo that observed something other than it claims.
//
// The binary is also every child process the demos and serve start:
// harness.RunChildIfRequested runs first in main.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/bench"
	"github.com/ratelab/ratelab/internal/redistest"
	racetests "github.com/ratelab/ratelab/race_tests"
	redisstore "github.com/ratelab/ratelab/redis_store"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitThrottled = 3
)

func main() {
	harness.RunChildIfRequested()
	racetests.RunChildIfRequested()
	windowboundary.RunChildIfRequested()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is bad input: one line on stderr, exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

var commands = map[string]func(args []string, stdout, stderr io.Writer) (int, error){
	"demo":     cmdDemo,
	"serve":    cmdServe,
	"cgi":      cmdCGI,
	"hit":      cmdHit,
	"inspect":  cmdInspect,
	"sweep":    cmdSweep,
	"race":     cmdRace,
	"boundary": cmdBoundary,
	"bench":    cmdBench,
	"redis":    cmdRedis,
}

const usage = `usage:
  ratelab demo    -store memory|file [-requests 40] [-limit 30] [-window 1h] [-workers 4] [-concurrency 8] [-at RFC3339] [-stable]
  ratelab serve   -model cgi|pool|single|two-hosts -store memory|file|redis [-addr 127.0.0.1:8080] [-limit 30] [-window 1h] [-workers 4] [-dir DIR] [-at RFC3339] [-algorithm fixed|sliding|log|gcra] [-burst N] [-fail open|closed] [-redis URL]
  ratelab cgi     -store memory|file|redis [-dir DIR] [-redis URL] [-limit 30] [-window 1h] [-algorithm fixed|sliding|log|gcra] [-burst N] [-fail open|closed]
  ratelab hit     -dir DIR -key KEY [-rule demo-start] [-limit 30] [-window 1h] [-at RFC3339] [-fail open|closed] [-algorithm fixed|sliding|log|gcra] [-burst N]
  ratelab inspect -dir DIR [-at RFC3339]
  ratelab sweep   -dir DIR [-at RFC3339]
  ratelab race    [-procs 8] [-hits 500] [-stable]
  ratelab boundary [-limit 30] [-window 1h] [-burst 5] [-seed 1] [-processes] [-svg FILE]
  ratelab bench   [-o FILE] [-quick]
  ratelab redis   [-redis URL] [-requests 130] [-limit 30] [-window 1h] [-workers 2] [-concurrency 8] [-at RFC3339] [-stable]
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "ratelab: unknown command %q: use demo, serve, hit, inspect or sweep\n", args[0])
		return exitUsage
	}
	code, err := cmd(args[1:], stdout, stderr)
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

// flags is a flag set that reports bad flags as one usage line.
type flags struct {
	*flag.FlagSet
	limit   int
	window  time.Duration
	workers int
	dir     string
	at      string
	stdout  io.Writer
	logger  *slog.Logger
}

func newFlags(name string, stdout io.Writer) *flags {
	f := &flags{FlagSet: flag.NewFlagSet("ratelab "+name, flag.ContinueOnError), stdout: stdout, logger: slog.Default()}
	f.Usage = func() {} // errors are reported as one line by parse
	f.SetOutput(io.Discard)
	return f
}

func (f *flags) common(limit, window, workers, dir, at bool) {
	if limit {
		f.IntVar(&f.limit, "limit", 30, "hits allowed per window (> 0)")
	}
	if window {
		f.DurationVar(&f.window, "window", time.Hour, "window length, whole seconds (> 0)")
	}
	if workers {
		f.IntVar(&f.workers, "workers", 4, "worker processes of the pool model (> 0)")
	}
	if dir {
		f.StringVar(&f.dir, "dir", "", "base directory; state lives in DIR/rate-limits")
	}
	if at {
		f.StringVar(&f.at, "at", "", "the time to act at, RFC 3339 (default: now)")
	}
}

func (f *flags) parse(args []string) error {
	err := f.Parse(args)
	if errors.Is(err, flag.ErrHelp) { // asked for: print the flags on stdout
		fmt.Fprintf(f.stdout, "usage of %s:\n", f.Name())
		f.SetOutput(f.stdout)
		f.PrintDefaults()
		return err
	}
	if err != nil {
		return usagef("%v (see ratelab %s -h)", err, strings.TrimPrefix(f.Name(), "ratelab "))
	}
	if f.NArg() > 0 {
		return usagef("unexpected argument %q", f.Arg(0))
	}
	if f.Lookup("limit") != nil && f.limit <= 0 {
		return usagef("-limit %d must be positive", f.limit)
	}
	if f.Lookup("window") != nil {
		if err := (ratelab.Rule{Name: "w", Limit: 1, Window: f.window}).Validate(); err != nil {
			return usagef("-window %v must be a whole number of seconds from 1s to %v", f.window, ratelab.MaxWindow)
		}
	}
	if f.Lookup("workers") != nil && f.workers <= 0 {
		return usagef("-workers %d must be positive", f.workers)
	}
	return nil
}

func (f *flags) now() (time.Time, error) {
	if f.at == "" {
		return time.Now(), nil
	}
	t, err := time.Parse(time.RFC3339, f.at)
	if err != nil {
		return time.Time{}, usagef("-at %q is not an RFC 3339 time such as 2026-07-09T00:59:59Z", f.at)
	}
	if err := ratelab.CheckInstant(t); err != nil {
		return time.Time{}, usagef("-at %q: %v", f.at, strings.TrimPrefix(err.Error(), "ratelab: "))
	}
	return t, nil
}

// parseForStore defines -window, -dir and -at, parses args, then reads -at
// and opens the file store at -dir: the commands that only look at state.
func (f *flags) parseForStore(args []string) (time.Time, *fixedfilestore.Store, error) {
	f.common(false, false, false, true, true)
	if err := f.parse(args); err != nil {
		return time.Time{}, nil, err
	}
	now, err := f.now()
	if err != nil {
		return time.Time{}, nil, err
	}
	store, err := f.openStore(ratelab.FailOpen)
	return now, store, err
}

// openStore opens the file store at -dir; a missing or unusable directory
// is bad input.
func (f *flags) openStore(policy ratelab.FailPolicy) (*fixedfilestore.Store, error) {
	if f.dir == "" {
		return nil, usagef("-dir is required")
	}
	s, err := fixedfilestore.New(f.dir, fixedfilestore.Options{FailPolicy: policy, Logger: f.logger})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return s, nil
}

func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("demo", stdout)
	store := f.String("store", "", "memory or file (required)")
	requests := f.Int("requests", 40, "requests from one client address (> 0)")
	conc := f.Int("concurrency", 8, "requests in flight in the burst; 1 sends only one by one")
	stable := f.Bool("stable", false, "leave out wall times, so that runs with -at print the same bytes")
	f.common(true, true, true, false, true)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *store != "memory" && *store != "file" {
		return 0, usagef("-store %q: use memory or file", *store)
	}
	if *requests <= 0 || *conc <= 0 {
		return 0, usagef("-requests and -concurrency must be positive")
	}
	dir, err := os.MkdirTemp("", "ratelab-demo-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)

	app := harness.App{Limit: f.limit, Window: f.window}
	if f.at != "" {
		if app.Now, err = f.now(); err != nil {
			return 0, err
		}
	}
	progress := stderr
	if *stable {
		progress = nil
	}
	rep, err := harness.Demo(context.Background(), *store, app, f.workers,
		harness.Workload{Requests: *requests, Concurrency: *conc}, dir, progress)
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, *stable)
	fmt.Fprintln(stdout)
	return verdict(stdout, rep.Pass(), "every row shows what the demo claims"), nil
}

func cmdServe(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("serve", stdout)
	model := f.String("model", "", "cgi, pool, single or two-hosts (required)")
	store := f.String("store", "", "memory, file or redis (required)")
	addr := f.String("addr", "127.0.0.1:8080", "address to listen on")
	algo := f.String("algorithm", "fixed", "fixed, sliding, log or gcra")
	burst := f.Int("burst", 0, "gcra: hits allowed at once, 0 to -limit (0 means 1)")
	fail := f.String("fail", "open", "file and redis stores: what to do when the state cannot be reached: open or closed")
	redisURL := f.String("redis", "", "redis store: the server, e.g. redis://127.0.0.1:6379/0")
	f.common(true, true, true, true, true)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	m, err := harness.ParseModel(*model)
	if err != nil {
		return 0, usagef("-model %q: use cgi, pool, single or two-hosts", *model)
	}
	alg, err := ratelab.ParseAlgorithm(*algo)
	if err != nil {
		return 0, usagef("-algorithm %q: use fixed, sliding, log or gcra", *algo)
	}
	policy, err := ratelab.ParseFailPolicy(*fail)
	if err != nil {
		return 0, usagef("-fail %q: use open or closed", *fail)
	}
	app := harness.App{Store: *store, Limit: f.limit, Window: f.window, Dir: f.dir, Algorithm: alg, Burst: *burst, FailPolicy: policy, RedisURL: *redisURL}
	if f.at != "" {
		if app.Now, err = f.now(); err != nil {
			return 0, err
		}
	}
	if *store == "file" && f.dir == "" {
		d, err := os.MkdirTemp("", "ratelab-serve-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(d)
		app.Dir = d
	}
	if err := app.Validate(); err != nil {
		return 0, usagef("%v", strings.TrimPrefix(err.Error(), "harness: "))
	}
	if err := checkServe(app, f.workers, stderr); err != nil {
		return 0, err
	}
	h, err := harness.Start(harness.Config{Model: m, App: app, Workers: f.workers, Addr: *addr})
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(stdout, h.URL)
	fmt.Fprintf(stderr, "serving model=%s store=%s limit %d per %v", m, app.Store, app.Limit, app.Window)
	if app.Store == "file" {
		fmt.Fprintf(stderr, " state in %s", app.Dir)
	}
	fmt.Fprintf(stderr, "\ntry: for i in $(seq 35); do curl -s -o /dev/null -w '%%{http_code} ' -X POST %s; done; echo\nCtrl-C stops it\n", h.URL)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	if err := h.Close(); err != nil {
		return 0, err
	}
	return exitOK, nil
}

// cmdCGI is the demo endpoint as a CGI program for a real web server: a
// two-line wrapper in its cgi-bin runs it once per request. Outside a CGI
// server it says so and exits 2; under one, a configuration error is
// answered 500 with the reason in one line, also written to stderr (the
// server's error log).
func cmdCGI(args []string, stdout, stderr io.Writer) (int, error) {
	if os.Getenv("GATEWAY_INTERFACE") == "" {
		return 0, usagef("%v", harness.ErrNotCGI)
	}
	f := newFlags("cgi", io.Discard)
	store := f.String("store", "", "memory, file or redis (required)")
	algo := f.String("algorithm", "fixed", "fixed, sliding, log or gcra")
	burst := f.Int("burst", 0, "gcra: hits allowed at once, 0 to -limit (0 means 1)")
	fail := f.String("fail", "open", "file and redis stores: what to do when the state cannot be reached: open or closed")
	redisURL := f.String("redis", "", "redis store: the server, e.g. redis://127.0.0.1:6379/0")
	f.common(true, true, false, true, false)
	app, err := func() (harness.App, error) {
		if err := f.parse(args); err != nil {
			return harness.App{}, err
		}
		alg, err := ratelab.ParseAlgorithm(*algo)
		if err != nil {
			return harness.App{}, err
		}
		policy, err := ratelab.ParseFailPolicy(*fail)
		if err != nil {
			return harness.App{}, err
		}
		a := harness.App{Store: *store, Dir: f.dir, RedisURL: *redisURL, Limit: f.limit, Window: f.window,
			Algorithm: alg, Burst: *burst, FailPolicy: policy}
		return a, a.Validate()
	}()
	if err != nil {
		harness.CGIError(err, stderr)
		return exitUsage, nil
	}
	if err := harness.ServeCGI(app, stderr); err != nil {
		return exitFailure, nil // answered 500 and logged already
	}
	return exitOK, nil
}

// checkServe finds configuration errors before serve prints its URL: a
// state directory that cannot be used, a Redis that refuses the URL's
// password or database, more workers than harness.MaxWorkers. A Redis that
// cannot be reached is an outage, not a configuration error: it is
// reported, and the hits follow the fail policy until it is back.
func checkServe(app harness.App, workers int, stderr io.Writer) error {
	if workers > harness.MaxWorkers {
		return usagef("-workers %d: at most %d", workers, harness.MaxWorkers)
	}
	switch app.Store {
	case "file":
		s, err := fixedfilestore.New(app.Dir, fixedfilestore.Options{})
		if err != nil {
			return usagef("%v", err)
		}
		return s.Close()
	case "redis":
		c, err := redisstore.NewClient(app.RedisURL, time.Second)
		if err != nil {
			return usagef("-redis: %v", err)
		}
		defer c.Close()
		err = redisstore.CheckServer(context.Background(), c)
		switch {
		case errors.Is(err, redisstore.ErrRefused):
			return usagef("-redis %s: %v", app.RedisURL, err)
		case err != nil:
			fmt.Fprintf(stderr, "ratelab serve: warning: redis at %s is unreachable (%v); until it is back every hit fails %s\n", app.RedisURL, err, app.FailPolicy)
		}
	}
	return nil
}

// hitResult is the JSON line ratelab hit prints; waits are whole seconds,
// rounded up.
type hitResult struct {
	Allowed    bool   `json:"allowed"`
	Rule       string `json:"rule"`
	Limit      int64  `json:"limit"`
	Remaining  int64  `json:"remaining"`
	RetryAfter int64  `json:"retry_after"`
	ResetAfter int64  `json:"reset_after"`
	NotCounted string `json:"not_counted,omitempty"`
}

func cmdHit(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("hit", stdout)
	f.logger = cliLogger(stderr)
	key := f.String("key", "", "the key to count, e.g. ip:203.0.113.7 (required)")
	name := f.String("rule", "demo-start", "the rule's name: its state is kept apart from every other rule's")
	fail := f.String("fail", "open", "what to do when the state cannot be reached: open or closed")
	algo := f.String("algorithm", "fixed", "fixed (the original's fixed window), sliding (sliding-window counter), log (sliding log) or gcra")
	burst := f.Int("burst", 0, "gcra: hits allowed at once, 0 to -limit (0 means 1)")
	f.common(true, true, false, true, true)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *key == "" {
		return 0, usagef("-key is required")
	}
	policy, err := ratelab.ParseFailPolicy(*fail)
	if err != nil {
		return 0, usagef("-fail %q: use open or closed", *fail)
	}
	alg, err := ratelab.ParseAlgorithm(*algo)
	if err != nil {
		return 0, usagef("-algorithm %q: use fixed, sliding, log or gcra", *algo)
	}
	rule := ratelab.Rule{Name: *name, Limit: int64(f.limit), Window: f.window, Algorithm: alg, Burst: int64(*burst)}
	if err := rule.Validate(); err != nil {
		return 0, usagef("%v", strings.TrimPrefix(err.Error(), "ratelab: "))
	}
	now, err := f.now()
	if err != nil {
		return 0, err
	}
	store, err := f.openStore(policy)
	if err != nil {
		return 0, err
	}
	l, err := ratelab.NewLimiter(store, rule)
	if err != nil {
		return 0, usagef("%v", err)
	}
	d, err := l.AllowAt(context.Background(), *key, now)
	if err != nil {
		return 0, err
	}
	res := hitResult{Allowed: d.Allowed, Rule: rule.Name, Limit: rule.Limit, Remaining: d.Remaining,
		RetryAfter: ratelab.CeilSeconds(d.RetryAfter), ResetAfter: ratelab.CeilSeconds(d.ResetAfter)}
	if d.NotCounted != nil {
		res.NotCounted = d.NotCounted.Error()
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return 0, err
	}
	if !d.Allowed {
		return exitThrottled, nil
	}
	return exitOK, nil
}

func cmdInspect(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("inspect", stdout)
	now, store, err := f.parseForStore(args)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	entries, err := store.Inspect()
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if e.Err != nil {
			fmt.Fprintf(stdout, "%s  unreadable: %v\n", printable(e.Name), e.Err)
			continue
		}
		status := "expired"
		if e.Live(now) {
			status = "live"
		}
		fmt.Fprintf(stdout, "%s  %s  %s\n", e.Name, e.Describe(), status)
	}
	fmt.Fprintf(stdout, "%d state files in %s\n", len(entries), store.Dir())
	return exitOK, nil
}

func cmdSweep(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("sweep", stdout)
	now, store, err := f.parseForStore(args)
	if err != nil {
		return 0, err
	}
	defer store.Close()
	report, err := store.SweepAt(now)
	if err != nil {
		return 0, err
	}
	counts := map[fixedfilestore.SweepAction]int{}
	for _, e := range report {
		counts[e.Action]++
		line := fmt.Sprintf("%-7s %s", e.Action, printable(e.Name))
		if e.Reason != "" {
			line += "  (" + e.Reason + ")"
		}
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintf(stdout, "removed %d, kept %d, busy %d, skipped %d (judged by each state at %s)\n",
		counts[fixedfilestore.Removed], counts[fixedfilestore.Kept], counts[fixedfilestore.Busy], counts[fixedfilestore.Skipped],
		now.UTC().Format(time.RFC3339))
	return exitOK, nil
}

// printable returns a file name as it is when it is made of letters,
// digits, '.', '_' and '-', and quoted otherwise: a name planted with a
// newline or an escape sequence cannot fake a line of the report.
func printable(name string) string {
	for _, c := range []byte(name) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return strconv.Quote(name)
		}
	}
	return name
}

func cmdRace(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("race", stdout)
	procs := f.Int("procs", 8, "stress: processes hitting one key at once (> 0)")
	hits := f.Int("hits", 500, "stress: hits per process (> 0)")
	stable := f.Bool("stable", false, "leave out throughput and timings, which differ from run to run")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *procs <= 0 || *hits <= 0 {
		return 0, usagef("-procs and -hits must be positive")
	}
	dir, err := os.MkdirTemp("", "ratelab-race-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	progress := stderr
	if *stable {
		progress = nil
	}
	rep, err := racetests.Demo(dir, *procs, *hits, progress)
	if err != nil {
		return 0, err
	}
	rep.Print(stdout, !*stable)
	fmt.Fprintln(stdout)
	return verdict(stdout, rep.Pass(), "every claim held; lock-free stress figures are shown, not claimed"), nil
}

func cmdBoundary(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("boundary", stdout)
	def := windowboundary.DefaultConfig()
	burst := f.Int("burst", def.Burst, "GCRA: requests that may come early (> 0)")
	seed := f.Uint64("seed", def.Seed, "seed of the random traffic")
	procs := f.Bool("processes", true, "also run the edge pattern across processes through the file store")
	svg := f.String("svg", "", "write the chart to this file and exit")
	f.common(true, true, false, false, false)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *burst <= 0 {
		return 0, usagef("-burst %d must be positive", *burst)
	}
	c := windowboundary.Config{Limit: f.limit, Window: f.window, Burst: *burst, Seed: *seed, T0: def.T0}
	if *svg != "" {
		out, err := os.Create(*svg)
		if err != nil {
			return 0, err
		}
		if err := windowboundary.WriteSVG(out, c); err != nil {
			out.Close()
			return 0, err
		}
		return exitOK, out.Close()
	}
	if *procs {
		dir, err := os.MkdirTemp("", "ratelab-boundary-")
		if err != nil {
			return 0, err
		}
		defer os.RemoveAll(dir)
		c.Dir = dir
	}
	rep, err := windowboundary.Demo(c)
	if err != nil {
		return 0, err
	}
	rep.Print(stdout)
	if !rep.Pass() {
		return exitFailure, nil
	}
	return exitOK, nil
}

func cmdBench(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("bench", stdout)
	out := f.String("o", "", "write the Markdown report to this file (default: standard output)")
	quick := f.Bool("quick", false, "a short run, for checking that it works")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "ratelab-bench-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	o := bench.Default(dir)
	o.Progress = stderr
	if *quick {
		o.Rounds, o.PerRound, o.Procs, o.HitsEach, o.Repeats = 1, 50, []int{1, 2}, 20, 1
	}
	res, err := bench.Run(o)
	if err != nil {
		return 0, err
	}
	w := stdout
	if *out != "" {
		file, err := os.Create(*out)
		if err != nil {
			return 0, err
		}
		defer file.Close()
		w = file
	}
	res.Markdown(w)
	if *out != "" {
		fmt.Fprintln(stderr, "wrote", *out)
	}
	return exitOK, nil
}

// cliLogger logs to stderr without timestamps: a command prints a line or
// two, and its output should read the same every time.
func cliLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
}

func cmdRedis(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("redis", stdout)
	url := f.String("redis", "", "a Redis server to use (default: start a private redis-server)")
	requests := f.Int("requests", 130, "requests from one client address (> 0)")
	conc := f.Int("concurrency", 8, "requests in flight in the burst; 1 sends only one by one")
	stable := f.Bool("stable", false, "leave out wall times, so that runs with -at print the same bytes")
	f.common(true, true, false, false, true)
	f.IntVar(&f.workers, "workers", 2, "worker processes per pool or host (> 0)")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *requests <= 0 || *conc <= 0 {
		return 0, usagef("-requests and -concurrency must be positive")
	}
	app := harness.App{Limit: f.limit, Window: f.window}
	if f.at != "" {
		var err error
		if app.Now, err = f.now(); err != nil {
			return 0, err
		}
	}
	if *url == "" {
		srv, err := redistest.Start()
		if err != nil {
			return 0, err
		}
		defer srv.Stop()
		*url = srv.URL()
	}
	client, err := redisstore.NewClient(*url, 2*time.Second)
	if err != nil {
		return 0, usagef("%v", err)
	}
	defer client.Close()
	ctx := context.Background()
	reset := func() error { return client.FlushDB(ctx).Err() }
	dir, err := os.MkdirTemp("", "ratelab-redis-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	progress := stderr
	if *stable {
		progress = nil
	}
	rep, err := harness.RedisDemo(ctx, app, f.workers, harness.Workload{Requests: *requests, Concurrency: *conc}, dir, *url, reset, progress)
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, *stable)
	if err := reset(); err != nil {
		return 0, err
	}
	pitfalls, err := redisstore.Pitfalls(ctx, client)
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Redis pitfall\texpected\tobserved\tverdict")
	pass := rep.Pass()
	for _, p := range pitfalls {
		v := "ok"
		if !p.Pass() {
			v, pass = "FAIL", false
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Case, p.Expected, p.Observed, v)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	return verdict(stdout, pass, "every row shows what the demo claims"), nil
}

// printHarnessReport prints a harness report; stable leaves out wall times.
func printHarnessReport(stdout io.Writer, rep harness.Report, stable bool) {
	if stable {
		rep.PrintStable(stdout)
		return
	}
	fmt.Fprintln(stdout)
	rep.Print(stdout)
}

// verdict ends a demonstration's output with its PASS or FAIL line and
// returns the exit status: a demo that saw something other than it claims
// exits non-zero.
func verdict(stdout io.Writer, pass bool, claim string) int {
	if !pass {
		fmt.Fprintln(stdout, "FAIL: what ran differs from what the demo claims (see the rows marked FAIL)")
		return exitFailure
	}
	fmt.Fprintln(stdout, "PASS: "+claim)
	return exitOK
}
