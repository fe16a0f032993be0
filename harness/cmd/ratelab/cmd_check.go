package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/ratelab/ratelab"
	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/choices"
	"github.com/ratelab/ratelab/linearizability"
	racetests "github.com/ratelab/ratelab/race_tests"
)

// checkRun is one configuration ratelab check runs and checks.
type checkRun struct {
	store         harness.StoreKind
	model         string
	algorithm     ratelab.Algorithm
	clients, hits int
	workers       int
	// window is the rule's (0: an hour); speed, if not 0, runs the
	// stores on the history's clock, that many times as fast, and paces
	// the clients across windows (-speed).
	window time.Duration
	speed  int64
	// histories is how many histories of c ratelab check records (-runs).
	histories int
	kills     int // processes killed mid-hit (-fault kill)
	stops     int // processes stopped mid-hit, then continued (-fault stop)
	// counter, if set, runs race_tests' counter (lock-free or flock) in
	// processes hitting it directly, instead of store under model.
	counter string
	html    string // where to write porcupine's visualization
	svg     string // where to draw the history (linearizability.WriteSVG)
	// failover runs the Redis failover lesson (-fault failover), with
	// WaitReplicas redisWait.
	failover  bool
	redisWait int
	// move runs the Redis Cluster lesson (-fault move): the key's slot
	// moved to another primary while the clients hit it.
	move bool
	// mistake runs database_lock's mistake on -store mysql or postgres.
	mistake string
	// servers are the check's private servers, shared by its histories;
	// nil starts and stops one for this history alone.
	servers *privateServers
	// interrupted reports a signal to stop at the next history
	// (interruptible); nil: none comes.
	interrupted func() bool
}

// checkTimeout bounds the checker's search for one history.
const checkTimeout = time.Minute

func cmdCheck(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("check", stdout)
	c := checkRun{}
	store := f.String("store", "", choices.Or(harness.Kinds())+", the servers private (default: run the table of claims)")
	f.StringVar(&c.model, "model", "single", "execution model: single, pool, cgi or two-hosts")
	alg := f.String("algorithm", "fixed", choices.Or(ratelab.Algorithms()))
	f.IntVar(&c.clients, "clients", 8, "clients sending at once (> 0)")
	f.IntVar(&c.hits, "hits", 10, "requests each client sends, one after another (> 0); under -fault move, hits/4 in each of the move's 4 phases, half the clients sitting out the third")
	fault := f.String("fault", "none", "none; kill: two processes SIGKILL themselves in the middle of a hit; stop: two SIGSTOP themselves there, and are continued once the others have answered 8 hits (or after 300 ms); -store redis only: failover, the primary killed and its replica promoted; move, a cluster's slot moved to another node under the hits")
	f.StringVar(&c.mistake, "mistake", "", "with -store mysql or postgres: "+databaselock.ReadThenWrite+" or "+databaselock.ResetFirst+", the database lesson's mistakes")
	f.IntVar(&c.redisWait, "redis-wait", 0, "with -fault failover: replicas each hit waits for (0 or 1)")
	f.StringVar(&c.counter, "counter", "", "lock-free or flock: race_tests' counter in processes that hit it directly, instead of -store")
	f.StringVar(&c.svg, "svg", "", "draw the history as a sequence diagram in this file (for one client: -clients 1)")
	f.StringVar(&c.html, "html", "", "write porcupine's visualization of the history to this file")
	f.Int64Var(&c.speed, "speed", 0, fmt.Sprintf("0: the stores read the wall clock; 1 to %d: they read the history's clock (CLOCK_MONOTONIC) run that many times as fast, the clients send 2 hits per window each, and the limit is half the clients (a 1s window at 5 passes in 200ms)", linearizability.MaxSpeed))
	f.IntVar(&c.histories, "runs", 1, "histories to record and check, one after another, until one is not linearizable (1 to 1000); for the table of claims, how many times to run it, each run to its end")
	rows := f.String("rows", "", "without -store or -counter: run only the rows of the table of claims whose history (first column) this regular expression matches")
	f.workersFlag().windowFlag()
	if err := f.parse(args); err != nil {
		return 0, err
	}
	c.workers, c.algorithm, c.store, c.window = f.workers, ratelab.Algorithm(*alg), harness.StoreKind(*store), f.window
	if err := c.check(*fault); err != nil {
		return 0, err
	}
	if err := f.workersRead(c.model); err != nil {
		return 0, err
	}
	if err := modeFlags(f.FlagSet, string(c.store), c.counter, c.mistake); err != nil {
		return 0, err
	}
	interrupted, stopListening := interruptible()
	defer stopListening()
	c.interrupted = interrupted
	if c.store == "" && c.counter == "" {
		table, skipped, err := tableRows(*rows)
		if err != nil {
			return 0, err
		}
		return checkClaims(stdout, stderr, skipped, table, c.histories, interrupted)
	}
	v, err := c.runs(stdout, stderr)
	if err != nil {
		return 0, err
	}
	if !v.Linearizable {
		return exitFailure, nil
	}
	return exitOK, nil
}

// checkRepeats reports bad -runs, -window and -speed.
func (c *checkRun) checkRepeats(fault string) error {
	switch {
	case c.histories < 1 || c.histories > 1000:
		return usagef("-runs %d: 1 to 1000", c.histories)
	case c.speed < 0 || c.speed > linearizability.MaxSpeed:
		return usagef("-speed %d: 0 to %d", c.speed, linearizability.MaxSpeed)
	case (c.speed > 0 || c.window != time.Hour) && (c.store == "" || c.mistake != "" || fault == "failover" || fault == "move"):
		return usagef("-window and -speed need -store, under an execution model")
	case c.speed > 0 && c.hits < 2*minWindows+2:
		return usagef("-speed needs -hits %d or more: two a window, across %d windows", 2*minWindows+2, minWindows)
	}
	return nil
}

// runs records and checks -runs histories of c, one after another, and
// prints the verdict of each; it stops at the first that is not
// linearizable, and returns it, or the last.
func (c checkRun) runs(stdout, stderr io.Writer) (linearizability.Verdict, error) {
	var v linearizability.Verdict
	for range c.histories {
		if c.interrupted != nil && c.interrupted() {
			return v, errInterrupted
		}
		var err error
		if v, err = c.run(stderr); err != nil {
			return v, err
		}
		fmt.Fprintln(stdout, v)
		fmt.Fprintf(stderr, "check: the checker took %v\n", v.Took.Round(time.Millisecond))
		if c.speed > 0 {
			fmt.Fprintf(stderr, "check: the hits' instants span %.1f windows of the history's clock\n", float64(v.Span)/float64(c.window))
		}
		if !v.Linearizable {
			break
		}
	}
	return v, nil
}

// check reports bad flags, and reads -fault.
func (c *checkRun) check(fault string) error {
	switch {
	case c.clients <= 0 || c.hits <= 0:
		return usagef("-clients and -hits must be positive")
	case c.clients > 100000 || c.hits > 100000 || c.clients*c.hits > 100000:
		return usagef("-clients %d × -hits %d is more than 100000 hits", c.clients, c.hits)
	case fault != "none" && fault != "kill" && fault != "stop" && fault != "failover" && fault != "move":
		return usagef("-fault %q: use none, kill, stop, failover or move", fault)
	case (fault == "failover" || fault == "move") && c.store != "redis":
		return usagef("-fault %s needs -store redis", fault)
	case fault == "move" && c.hits < 4:
		return usagef("-fault move needs -hits 4 or more: a quarter of them in each state of the move")
	case fault == "move" && c.clients < 2:
		return usagef("-fault move needs -clients 2 or more: half of them sit out the keys' move")
	case c.mistake != "" && c.mistake != databaselock.ReadThenWrite && c.mistake != databaselock.ResetFirst:
		return usagef("-mistake %q: use %s or %s", c.mistake, databaselock.ReadThenWrite, databaselock.ResetFirst)
	case c.mistake != "" && c.store != "mysql" && c.store != "postgres":
		return usagef("-mistake needs -store mysql or postgres")
	case c.redisWait < 0 || c.redisWait > 1 || c.redisWait > 0 && fault != "failover":
		return usagef("-redis-wait %d: 0 or 1, with -fault failover", c.redisWait)
	case c.store == "" && c.counter == "" && (c.html != "" || c.svg != ""):
		return usagef("-html needs -store or -counter: the table of claims runs many histories")
	case c.store != "" && c.counter != "":
		return usagef("-store and -counter: choose one")
	case c.counter != "" && c.counter != "lock-free" && c.counter != "flock":
		return usagef("-counter %q: use lock-free or flock", c.counter)
	}
	if err := c.checkRepeats(fault); err != nil {
		return err
	}
	c.kills, c.stops = map[string]int{"kill": 2}[fault], map[string]int{"stop": 2}[fault]
	c.failover, c.move = fault == "failover", fault == "move"
	if err := (ratelab.Rule{Name: "check", Limit: 1, Window: time.Hour, Algorithm: c.algorithm}).Validate(); err != nil {
		return usagef("-algorithm %q: use %s", c.algorithm, choices.Or(ratelab.Algorithms()))
	}
	if _, err := harness.ParseModel(c.model); err != nil {
		return usagef("%v", err)
	}
	if c.store != "" && !slices.Contains(harness.Kinds(), c.store) {
		return usagef("-store %q: use %s", c.store, choices.Or(harness.Kinds()))
	}
	return nil
}

// run records one history of c and checks it.
func (c checkRun) run(stderr io.Writer) (linearizability.Verdict, error) {
	dir, cleanup, err := scratch("check")
	if err != nil {
		return linearizability.Verdict{}, err
	}
	defer cleanup()
	record := c.lesson()
	if record == nil {
		record = c.underModel(stderr)
	}
	hist, err := record(dir)
	if err != nil {
		return linearizability.Verdict{}, err
	}
	if c.svg != "" {
		if err := writeSVG(c.svg, hist, c); err != nil {
			return linearizability.Verdict{}, err
		}
	}
	if c.kills > 0 && hist.Pending < c.kills {
		return linearizability.Verdict{}, fmt.Errorf("check: %d processes were to die mid-hit, the history shows %d", c.kills, hist.Pending)
	}
	if n := hist.Span() / c.ruleWindow(); c.speed > 0 && n < minWindows {
		return linearizability.Verdict{}, fmt.Errorf("check: the hits' instants span %d whole windows, fewer than %d: the run crossed too few", n, minWindows)
	}
	v, err := linearizability.Check(hist, c.html, checkTimeout)
	if errors.Is(err, linearizability.ErrUndecided) {
		return v, fmt.Errorf("check: %w: use fewer -clients or -hits", err)
	}
	return v, err
}

// underModel returns what records c's store under c's execution model,
// its server private, half the hits allowed and half refused.
func (c checkRun) underModel(stderr io.Writer) func(dir string) (linearizability.History, error) {
	return func(dir string) (linearizability.History, error) {
		limit, gap := max(c.clients*c.hits/2, 1), time.Duration(0)
		if c.speed > 0 { // two hits per client per window, a quarter allowed
			limit, gap = max(c.clients/2, 1), c.ruleWindow()/time.Duration(c.speed)/2
		}
		app := harness.App{Store: c.store, Dir: dir, Limit: limit, Window: c.ruleWindow(), Algorithm: c.algorithm,
			FailPolicy: ratelab.FailClosed}
		if c.algorithm == ratelab.GCRA {
			app.Burst = limit
		}
		stop, err := c.privateServer(&app)
		if err != nil {
			return linearizability.History{}, err
		}
		defer stop()
		if err := app.Validate(); err != nil {
			return linearizability.History{}, usagef("%v", err)
		}
		cfg := httphost.Config{Model: harness.Model(c.model), App: app, Workers: c.workers, Stderr: stderr}
		if c.kills > 0 {
			cfg.Stderr = io.Discard // the killed processes' clients are told, and the front logs each
		}
		hist, _, err := linearizability.RecordModel(context.Background(), cfg, linearizability.Recording{Clients: c.clients, Hits: c.hits,
			Kills: c.kills, Stops: c.stops, Speed: c.speed, Gap: gap}, dir)
		return hist, err
	}
}

// minWindows is how many whole windows the instants of a run with -speed
// must span: fewer, and it did not cross the resets it is run for.
const minWindows = 3

// ruleWindow is the rule's window: -window, or an hour.
func (c checkRun) ruleWindow() time.Duration {
	if c.window == 0 {
		return time.Hour
	}
	return c.window
}

// lesson returns what records c's history when it is one of the lessons'
// runs rather than a store under an execution model: race_tests' counter
// (-counter), the database mistakes (-mistake), the Redis Cluster's slot
// move (-fault move) and failover (-fault failover).
func (c checkRun) lesson() func(dir string) (linearizability.History, error) {
	switch {
	case c.counter != "":
		return func(dir string) (linearizability.History, error) {
			return racetests.RecordCounter(dir, c.counter == "flock", c.clients, c.hits)
		}
	case c.mistake != "":
		return func(dir string) (linearizability.History, error) {
			app := harness.App{Store: c.store}
			stop, err := c.privateServer(&app)
			if err != nil {
				return linearizability.History{}, err
			}
			defer stop()
			key := map[harness.StoreKind]string{databaselock.MySQL: "mariadb", databaselock.Postgres: "postgres"}[c.store]
			return databaselock.RecordMistake(context.Background(), key, app.Server, c.mistake, dir)
		}
	case c.move:
		return func(dir string) (linearizability.History, error) {
			return beyondonehost.ClusterMoveHistory(context.Background(), c.clients, c.hits, dir)
		}
	case c.failover:
		return func(dir string) (linearizability.History, error) {
			return beyondonehost.FailoverHistory(context.Background(), c.failoverMode(), dir)
		}
	}
	return nil
}

// failoverMode is the failover lesson's mode -redis-wait asks for.
func (c checkRun) failoverMode() beyondonehost.FailoverMode {
	if c.redisWait > 0 {
		return beyondonehost.WaitForReplica
	}
	return beyondonehost.Asynchronous
}

// privateServer points app at the private server its store needs, if
// any, in a state of its own: a history starts from no state. It returns
// what releases it: the server of this history alone is stopped, one the
// check's histories share is left for the next.
func (c checkRun) privateServer(app *harness.App) (stop func(), err error) {
	if c.servers != nil {
		return func() {}, c.servers.point(app)
	}
	own := new(privateServers)
	if err := own.point(app); err != nil {
		own.stop()
		return nil, err
	}
	return own.stop, nil
}

// writeSVG draws hist into the file name.
func writeSVG(name string, hist linearizability.History, c checkRun) error {
	var b bytes.Buffer
	title := fmt.Sprintf("The %s store under %s: %d hits from one client, one at a time", c.store, c.model, c.hits)
	if c.failover {
		title = fmt.Sprintf("One client's %d hits on Redis, one at a time, across a failover (%s)", len(hist.Ops), c.failoverMode())
	}
	if err := linearizability.WriteSVG(&b, hist, title); err != nil {
		return err
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}
