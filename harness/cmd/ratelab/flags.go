package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	databaselock "github.com/ratelab/ratelab/database_lock"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/httplimit"
	"github.com/ratelab/ratelab/internal/choices"
)

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
	wait    time.Duration     // the file store's lock wait; 0: its default
	load    httphost.Workload // -requests and -concurrency
	// What -trusted-proxies and -forwarded-header say, once appFlags's
	// function has run: how the endpoint tells its clients apart.
	proxies, header string
	client          httplimit.Client
}

func newFlags(name string, stdout io.Writer) *flags {
	f := &flags{FlagSet: flag.NewFlagSet("ratelab "+name, flag.ContinueOnError), stdout: stdout, logger: slog.Default()}
	f.Usage = func() {} // errors are reported as one line by parse
	f.SetOutput(io.Discard)
	return f
}

// The flags several commands share, each defined by a call of its own.

// limitFlag defines -limit: hits allowed per window.
func (f *flags) limitFlag() *flags {
	f.IntVar(&f.limit, "limit", 30, "hits allowed per window (> 0)")
	return f
}

// windowFlag defines -window: the window's length.
func (f *flags) windowFlag() *flags {
	f.DurationVar(&f.window, "window", time.Hour, "window length, whole seconds (> 0)")
	return f
}

// workersFlag defines -workers: the pool's size.
func (f *flags) workersFlag() *flags {
	f.IntVar(&f.workers, "workers", 4, "worker processes of the pool model (> 0)")
	return f
}

// workloadFlags defines -requests, requests defaulting to requests, and
// -concurrency: the burst a demonstration sends.
func (f *flags) workloadFlags(requests int) *flags {
	f.IntVar(&f.load.Requests, "requests", requests, fmt.Sprintf("requests from one client address (1 to %d)", maxRequests))
	f.IntVar(&f.load.Concurrency, "concurrency", 8, fmt.Sprintf("requests in flight in the burst, 1 to %d; 1 sends only one by one", maxConcurrency))
	return f
}

// dirFlag defines -dir: the file store's base directory.
func (f *flags) dirFlag() *flags {
	f.StringVar(&f.dir, "dir", "", "base directory; state lives in DIR/rate-limits")
	return f
}

// atFlag defines -at: the instant to act at instead of the clock.
func (f *flags) atFlag() *flags {
	f.StringVar(&f.at, "at", "", "the time to act at, RFC 3339 (default: now)")
	return f
}

// holdsConnection reports whether args name a flag whose value is a
// connection string: -redis, -mysql or -postgres.
func holdsConnection(args []string) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "redis" || name == "mysql" || name == "postgres") {
			return true
		}
	}
	return false
}

func (f *flags) parse(args []string) error {
	if rec, ok := f.stdout.(*flagRecorder); ok { // usage is reading the flags
		rec.set = f.FlagSet
		return flag.ErrHelp
	}
	err := f.Parse(args)
	if errors.Is(err, flag.ErrHelp) { // asked for: print the flags on stdout
		fmt.Fprintf(f.stdout, "usage of %s:\n", f.Name())
		f.SetOutput(f.stdout)
		f.PrintDefaults()
		return err
	}
	// A connection string the shell split (a space in its password) is
	// not one argument but several, and any of them may be a piece of the
	// password: with one on the command line, no argument is quoted back.
	const notShown = "not shown: the command line holds a connection string, which may hold a password; one with spaces goes in quotes"
	if err != nil {
		if holdsConnection(args) {
			return usagef("bad flag or flag value (%s; see ratelab %s -h)", notShown, strings.TrimPrefix(f.Name(), "ratelab "))
		}
		return usagef("%v (see ratelab %s -h)", err, strings.TrimPrefix(f.Name(), "ratelab "))
	}
	if f.NArg() > 0 {
		if holdsConnection(args) {
			return usagef("unexpected argument (%s)", notShown)
		}
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
	if f.Lookup("workers") != nil && f.workers > harness.MaxWorkers {
		return usagef("-workers %d: at most %d", f.workers, harness.MaxWorkers)
	}
	for _, name := range []string{"o", "svg", "weight-svg", "html"} {
		if fl := f.Lookup(name); fl != nil && fl.Value.String() != "" {
			if err := checkOutput(fl.Value.String()); err != nil {
				return usagef("-%s %s: %v", name, fl.Value, err)
			}
		}
	}
	if f.Lookup("requests") != nil {
		return checkSizes("-requests", f.load.Requests, maxRequests, "-concurrency", f.load.Concurrency, maxConcurrency)
	}
	return nil
}

// flagRecorder is the stdout a command is run with to learn which flags
// it defines (command.flags): its flags' parse records the flag set and
// returns flag.ErrHelp, parsing nothing, so the command does nothing more.
type flagRecorder struct {
	set *flag.FlagSet
}

// Write discards what a command writes before it parses.
func (*flagRecorder) Write(p []byte) (int, error) { return len(p), nil }

// isBool reports whether fl is a bool flag, one that takes no value.
func isBool(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// defaultText is fl's default as a user types it: 1h, not 1h0m0s.
func defaultText(fl *flag.Flag) string {
	g, ok := fl.Value.(flag.Getter)
	if !ok {
		return fl.DefValue
	}
	d, ok := g.Get().(time.Duration)
	switch {
	case !ok:
		return fl.DefValue
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
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
	f.dirFlag().atFlag()
	if err := f.parse(args); err != nil {
		return time.Time{}, nil, err
	}
	now, err := f.now()
	if err != nil {
		return time.Time{}, nil, err
	}
	store, err := f.openStore()
	return now, store, err
}

// openStore opens the file store at -dir; a missing or unusable directory
// is bad input.
func (f *flags) openStore() (*fixedfilestore.Store, error) {
	if f.dir == "" {
		return nil, usagef("-dir is required")
	}
	if f.wait < 0 {
		return nil, usagef("-wait %v must not be negative", f.wait)
	}
	s, err := fixedfilestore.New(f.dir, fixedfilestore.Options{Logger: f.logger, LockWait: f.wait})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return s, nil
}

// scratch makes a fresh directory for one run under the system's temporary
// directory, and returns it with the function that removes it.
func scratch(name string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "ratelab-"+name+"-")
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// progressTo is where a long run reports its progress: stderr, or nowhere
// with -stable, whose output must be the same bytes on every run.
func progressTo(stderr io.Writer, stable bool) io.Writer {
	if stable {
		return nil
	}
	return stderr
}

// atOrZero is -at's instant, or the zero time (the clock) if -at is unset.
func (f *flags) atOrZero() (time.Time, error) {
	if f.at == "" {
		return time.Time{}, nil
	}
	return f.now()
}

// appFlags declares the flags of the endpoint's store, rule and clients
// (-redis, -mysql and -postgres from $RATELAB_REDIS and $RATELAB_DSN when
// unset) and returns what makes the App of them once the flags are
// parsed, bad or unread flags being bad usage; it also sets f's clients
// (proxies, header, client).
func (f *flags) appFlags() func() (harness.App, error) {
	store := f.String("store", "", choices.Or(harness.Kinds())+" (required)")
	algo := f.String("algorithm", "fixed", choices.Or(ratelab.Algorithms()))
	burst := f.Int("burst", 0, "gcra: hits allowed at once, 0 to -limit (0 means 1)")
	fail := f.String("fail", "open", "file, redis and database stores: what to do when the state cannot be reached: "+choices.Or(ratelab.FailPolicies())+" (decide in this process alone)")
	redisURL := f.String("redis", "", "redis store: the server, e.g. redis://127.0.0.1:6379/0 (a cluster: ?addr=host:port…; Sentinel: ?master_name=name); "+
		"unset, $RATELAB_REDIS, which keeps a password out of ps")
	redisWait := f.Int("redis-wait", 0, "redis store: replicas that must confirm each hit (WAIT); a hit they do not confirm was counted on the primary, and -fail closed refuses it (503)")
	redisWaitTimeout := f.Duration("redis-wait-timeout", 100*time.Millisecond, "redis store: with -redis-wait, how long to wait for the replicas")
	dsns := map[harness.StoreKind]*string{
		databaselock.MySQL:    f.String("mysql", "", "mysql store: the database, e.g. 'user:password@tcp(127.0.0.1:3306)/ratelab'; unset, $RATELAB_DSN"),
		databaselock.Postgres: f.String("postgres", "", "postgres store: the database, e.g. postgres://user:password@127.0.0.1:5432/ratelab; unset, $RATELAB_DSN"),
	}
	proxies := f.String("trusted-proxies", "", "networks of the proxies in front, CIDR or addresses, comma-separated, e.g. 127.0.0.0/8 (default: none; key on the connection's address)")
	header := f.String("forwarded-header", "", "with -trusted-proxies: the one header they append the client's address to, X-Forwarded-For or Forwarded")
	f.limitFlag().windowFlag().dirFlag()
	return func() (harness.App, error) {
		alg, err := ratelab.ParseAlgorithm(*algo)
		if err != nil {
			return harness.App{}, usagef("-algorithm %q: use %s", *algo, choices.Or(ratelab.Algorithms()))
		}
		policy, err := ratelab.ParseFailPolicy(*fail)
		if err != nil {
			return harness.App{}, usagef("-fail %q: use %s", *fail, choices.Or(ratelab.FailPolicies()))
		}
		if *redisWait < 0 {
			return harness.App{}, usagef("-redis-wait %d must not be negative", *redisWait)
		}
		if *redisWaitTimeout < 0 {
			return harness.App{}, usagef("-redis-wait-timeout %v must not be negative", *redisWaitTimeout)
		}
		if err := f.unread(harness.StoreKind(*store), alg); err != nil {
			return harness.App{}, err
		}
		a := harness.App{Store: harness.StoreKind(*store), Dir: f.dir,
			Limit: f.limit, Window: f.window, Algorithm: alg, Burst: *burst, FailPolicy: policy}
		if f.client, err = httphost.ClientOf(*proxies, *header); err != nil {
			return harness.App{}, usagef("-trusted-proxies %q -forwarded-header %q: %v", *proxies, *header,
				strings.TrimPrefix(err.Error(), "httplimit: "))
		}
		f.proxies, f.header = *proxies, *header
		// A password on the command line shows in ps; in the environment,
		// only to its own account (/proc/PID/environ is the owner's).
		switch dsn, ok := dsns[a.Store]; {
		case ok:
			a.Server = cmp.Or(*dsn, os.Getenv("RATELAB_DSN"))
		case a.Store == beyondonehost.Redis:
			a.Server = beyondonehost.WithWait(cmp.Or(*redisURL, os.Getenv("RATELAB_REDIS")), *redisWait, *redisWaitTimeout)
		}
		return a, nil
	}
}

// unread refuses a flag nothing would read: one for another store or
// algorithm (-redis, -burst without gcra), or without the flag it qualifies.
func (f *flags) unread(store harness.StoreKind, alg ratelab.Algorithm) error {
	for _, r := range []struct {
		flag, only string
		read       bool
	}{
		{"redis", "-store redis", store == beyondonehost.Redis},
		{"redis-wait", "-store redis", store == beyondonehost.Redis},
		{"redis-wait-timeout", "-redis-wait", f.Lookup("redis-wait").Value.String() != "0"},
		{"redis-allow-eviction", "-store redis", store == beyondonehost.Redis}, // serve's
		{"mysql", "-store mysql", store == databaselock.MySQL},
		{"postgres", "-store postgres", store == databaselock.Postgres},
		{"dir", "-store file", store == harness.File},
		{"fail", "a store that can fail (the memory store cannot)", store != harness.Memory},
		{"burst", "-algorithm gcra", alg == ratelab.GCRA},
		{"forwarded-header", "-trusted-proxies", f.Lookup("trusted-proxies").Value.String() != ""},
	} {
		if f.isSet(r.flag) && !r.read {
			return usagef("-%s applies to %s only", r.flag, r.only)
		}
	}
	return nil
}

// isSet reports whether the flag name was given on the command line.
func (f *flags) isSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}
