package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	databaselock "github.com/ratelab/ratelab/database_lock"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/redact"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

func cmdDemo(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("demo", stdout)
	store := f.String("store", "", "memory or file (required, unless -outage)")
	outage := f.String("outage", "", "instead of a store, a Redis nobody listens for, under this fail policy: open or local")
	stable := f.Bool("stable", false, "leave out wall times, so that runs with -at print the same bytes")
	f.workloadFlags(40).limitFlag().windowFlag().workersFlag().atFlag()
	if err := f.parse(args); err != nil {
		return 0, err
	}
	policy, err := demoPolicy(*store, *outage)
	if err != nil {
		return 0, err
	}
	dir, cleanup, err := scratch("demo")
	if err != nil {
		return 0, err
	}
	defer cleanup()

	app := harness.App{Limit: f.limit, Window: f.window, FailPolicy: policy}
	if app.Now, err = f.atOrZero(); err != nil {
		return 0, err
	}
	progress := progressTo(stderr, *stable)
	w := f.load
	var rep httphost.Report
	if *outage != "" {
		rep, err = beyondonehost.OutageDemo(context.Background(), app, f.workers, w, progress)
	} else {
		app.Store = harness.StoreKind(*store)
		rep, err = httphost.Demo(context.Background(), app, f.workers, w, dir, progress)
	}
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, *stable)
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, rep.Pass(), "every row shows what the demo claims"), nil
}

// demoPolicy checks that demo was given a store or an outage, and returns
// the outage's fail policy (FailOpen without one).
func demoPolicy(store, outage string) (ratelab.FailPolicy, error) {
	if outage == "" {
		if store != "memory" && store != "file" {
			return 0, usagef("-store %q: use memory or file", store)
		}
		return ratelab.FailOpen, nil
	}
	policy, err := ratelab.ParseFailPolicy(outage)
	switch {
	case err != nil || policy == ratelab.FailClosed:
		return 0, usagef("-outage %q: use open or local (fail-closed answers 503 to every request)", outage)
	case store != "":
		return 0, usagef("-outage replaces -store: give one of them")
	}
	return policy, nil
}

func cmdServe(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("serve", stdout)
	model := f.String("model", "", "cgi, pool, single or two-hosts (required)")
	addr := f.String("addr", "127.0.0.1:8080", "address to listen on")
	appOf := f.appFlags()
	allowEviction := f.Bool("redis-allow-eviction", false, "redis store: serve even if redis may evict keys (a maxmemory-policy other than noeviction), each eviction resetting a count")
	cgiProcs := f.Int("cgi-procs", httphost.DefaultCGIProcs, fmt.Sprintf("cgi model: programs run at once, as a shared host's entry-process limit; a request over it waits up to %v for its turn, then is answered 503 (1 to %d)", httphost.DefaultTimeouts().Worker, httphost.MaxCGIProcs))
	f.workersFlag().atFlag()
	if err := f.parse(args); err != nil {
		return 0, err
	}
	m, err := harness.ParseModel(*model)
	if err != nil {
		return 0, usagef("-model %q: use cgi, pool, single or two-hosts", *model)
	}
	if f.isSet("cgi-procs") && m != harness.CGI {
		return 0, usagef("-cgi-procs applies to -model cgi only")
	}
	if err := f.workersRead(string(m)); err != nil {
		return 0, err
	}
	// Listen for the signals before anything is made: from the first on,
	// serve stops and removes what it made.
	ctx, stop := stopContext()
	defer stop()
	app, cleanup, err := serveApp(f, appOf)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	cfg := httphost.Config{Model: m, App: app, Workers: f.workers, CGIProcs: *cgiProcs, TrustedProxies: f.proxies, ForwardedHeader: f.header}
	if cfg.App.Conns, err = checkServe(cfg, *allowEviction, stderr); err != nil {
		return 0, err
	}
	if cfg.Listener, err = net.Listen("tcp", *addr); err != nil { // before any process starts
		return 0, usagef("-addr %s: %v", *addr, err)
	}
	defer cfg.Listener.Close()
	if ip := cfg.Listener.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		fmt.Fprintf(stderr, "ratelab serve: warning: -addr %s listens beyond loopback: whoever reaches this machine reaches the endpoint\n", *addr)
	}
	return serve(ctx, cfg, f.dir == "", stdout, stderr)
}

// serveApp makes the App of serve's flags, its state in a fresh directory
// if the file store has no -dir; cleanup removes that directory.
func serveApp(f *flags, appOf func() (harness.App, error)) (app harness.App, cleanup func(), err error) {
	if app, err = appOf(); err != nil {
		return app, nil, err
	}
	if app.Now, err = f.atOrZero(); err != nil {
		return app, nil, err
	}
	cleanup = func() {}
	if app.Store == "file" && f.dir == "" {
		if app.Dir, cleanup, err = scratch("serve"); err != nil {
			return app, nil, err
		}
	}
	if err := app.Validate(); err != nil {
		cleanup()
		return app, nil, usagef("%v", strings.TrimPrefix(err.Error(), "harness: "))
	}
	return app, cleanup, nil
}

// serve starts the processes of cfg, prints the URL on stdout and what it
// serves on stderr, and serves until ctx ends (one of stopSignals came);
// scratch says that a file store's directory is serve's own, removed
// when it stops.
func serve(ctx context.Context, cfg httphost.Config, scratch bool, stdout, stderr io.Writer) (int, error) {
	h, err := httphost.Start(cfg)
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(stdout, h.URL)
	fmt.Fprint(stderr, banner(cfg, h.URL, scratch))

	<-ctx.Done()
	// The signals that follow — timeout -s INT sends one to serve, then
	// one to its group — are caught until the process exits, by a channel
	// nobody reads: their default would kill it before it has removed
	// what it made. (signal.Ignore would leave a moment in which a signal
	// is neither wanted nor ignored, and kills: 2 runs in 9 met it.)
	signal.Notify(make(chan os.Signal, 1), stopSignals...)
	if err := h.Close(); err != nil {
		return 0, err
	}
	return exitOK, nil
}

// banner is what serve says on stderr of what it serves at url, and a
// loop of curl to try it with: as many requests as one client needs to see
// a 429 in cfg's model and five more (harness.Expect), or, where none
// comes, why.
func banner(cfg httphost.Config, url string, scratch bool) string {
	app := cfg.App
	var b strings.Builder
	fmt.Fprintf(&b, "serving model=%s store=%s, limit %d per %d s", cfg.Model, app.Store, app.Limit, app.Window/time.Second)
	if app.Algorithm != "" && app.Algorithm != ratelab.FixedWindow {
		fmt.Fprintf(&b, ", %s", app.Algorithm)
	}
	if app.Algorithm == ratelab.GCRA { // what comes at once is the burst, not the limit
		fmt.Fprintf(&b, " burst %d", max(app.Burst, 1))
		app.Limit = max(app.Burst, 1)
	}
	if app.Store != "memory" { // the in-memory store cannot fail: no policy applies
		fmt.Fprintf(&b, ", fail %s", app.FailPolicy)
	}
	if app.Store == "file" {
		fmt.Fprintf(&b, ", state in %s", app.Dir)
		if scratch {
			b.WriteString(" (removed when serve stops; a kill -9 leaves it)")
		}
	}
	if cfg.Model == harness.CGI {
		fmt.Fprintf(&b, "; at most %d programs at once (-cgi-procs)", cfg.CGIProcs)
	}
	many := app.Limit*max(1, 2*cfg.Workers) + 1 // more than any model lets through
	ok, why := harness.Expect(harness.Scenario{Model: cfg.Model, App: app, Workers: cfg.Workers, Requests: many})
	n := ok + 5
	if ok == many {
		n = app.Limit + 5
	}
	fmt.Fprintf(&b, "\ntry: for i in $(seq %d); do curl -s -o /dev/null -w '%%{http_code} ' -X POST %s; done; echo\nexpect: %s\nCtrl-C stops it\n", n, url, why)
	return b.String()
}

// cmdCGI is the demo endpoint as a CGI program for a real web server: a
// two-line wrapper in its cgi-bin runs it once per request. Outside a CGI
// server it prints its flags for -h and otherwise says where it belongs
// and exits 2; under one, a configuration error is answered 500 with a
// body that names no detail (httphost.CGIErrorBody), the reason written to
// stderr in one line (the server's error log).
func cmdCGI(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("cgi", stdout)
	appOf := f.appFlags()
	if os.Getenv("GATEWAY_INTERFACE") == "" {
		if err := f.parse(args); errors.Is(err, flag.ErrHelp) {
			return 0, err
		}
		return 0, usagef("%v", httphost.ErrNotCGI)
	}
	f.stdout = io.Discard // under a CGI server stdout is the answer
	app, err := func() (harness.CheckedApp, error) {
		if err := f.parse(args); err != nil {
			return harness.CheckedApp{}, err
		}
		a, err := appOf()
		if err != nil {
			return harness.CheckedApp{}, err
		}
		return a.Check()
	}()
	if err != nil {
		httphost.CGIError(err, stderr)
		return exitUsage, nil
	}
	if err := httphost.ServeCGI(app, f.client, stderr); err != nil { // answered (400 or 500) and logged already
		if errors.Is(err, harness.ErrConfig) {
			return exitUsage, nil
		}
		return exitFailure, nil
	}
	return exitOK, nil
}

// checkServe finds configuration errors before serve prints its URL: a
// state directory that cannot be written, a Redis or a database that
// refuses the password or database named, an address that cannot be, more
// workers or CGI programs than the harness runs or than the database has
// connections for. A server that cannot be reached is an outage, not a
// configuration error: it is reported, and the hits follow the fail policy until it is
// back. A Redis that refuses writes or may evict keys is refused too, the
// latter unless allowEviction. A database's tables are created here, and
// its connections shared out: checkServe returns how many each worker may
// open, and warns when those already open on the server leave too few.
func checkServe(cfg httphost.Config, allowEviction bool, stderr io.Writer) (conns int, err error) {
	if cfg.Workers > harness.MaxWorkers {
		return 0, usagef("-workers %d: at most %d", cfg.Workers, harness.MaxWorkers)
	}
	if cfg.CGIProcs < 1 || cfg.CGIProcs > httphost.MaxCGIProcs {
		return 0, usagef("-cgi-procs %d: from 1 to %d", cfg.CGIProcs, httphost.MaxCGIProcs)
	}
	app := cfg.App
	switch app.Store {
	case harness.File:
		s, err := fixedfilestore.New(app.Dir, fixedfilestore.Options{})
		if err == nil {
			err = errors.Join(s.CheckWritable(), s.Close())
		}
		if err != nil {
			return 0, usagef("%v", err)
		}
	case beyondonehost.Redis:
		return 0, checkRedis(app, allowEviction, stderr)
	case databaselock.MySQL, databaselock.Postgres:
		return checkDatabase(cfg, stderr)
	}
	return 0, nil
}

// checkRedis asks the Redis of app for a PING, then for a probe write,
// then whether it may evict keys (checkEviction). Refused settings,
// refused writes and a server that does not speak Redis are configuration
// errors; an unreachable Redis is an outage, warned about.
func checkRedis(app harness.App, allowEviction bool, stderr io.Writer) error {
	shown := redact.String(app.Server)
	u, err := beyondonehost.ClientURL(app.Server)
	if err != nil {
		return usagef("-redis: %v", err)
	}
	c, err := redisstore.NewClient(u, time.Second)
	if err != nil {
		return usagef("-redis: %v", err)
	}
	defer c.Close()
	ctx := context.Background()
	err = redisstore.CheckServer(ctx, c)
	if err == nil {
		err = redisstore.CheckWrites(ctx, c, "")
	}
	switch {
	case errors.Is(err, redisstore.ErrRefused), errors.Is(err, redisstore.ErrWritesRefused), errors.Is(err, redisstore.ErrNotRedis):
		return usagef("-redis %s: %v", shown, err)
	case err != nil:
		fmt.Fprintf(stderr, "ratelab serve: warning: redis at %s is unreachable (%v); until it is back every hit fails %s\n", shown, err, app.FailPolicy)
		return nil
	}
	return checkEviction(ctx, c, shown, allowEviction, stderr)
}

// checkEviction refuses a Redis that may evict the limiter's keys unless
// allowEviction, and then warns once; a Redis that does not show its
// configuration is warned about.
func checkEviction(ctx context.Context, c redis.Cmdable, shown string, allowEviction bool, stderr io.Writer) error {
	err := redisstore.CheckEviction(ctx, c)
	switch {
	case errors.Is(err, redisstore.ErrEviction) && !allowEviction:
		return usagef("-redis %s: %v (-redis-allow-eviction accepts it)", shown, strings.TrimPrefix(err.Error(), "redisstore: "))
	case err != nil:
		fmt.Fprintf(stderr, "ratelab serve: warning: redis at %s: %v\n", shown, err)
	}
	return nil
}
