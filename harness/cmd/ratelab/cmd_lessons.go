package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/lab/bench"
	"github.com/ratelab/ratelab/lab/redisserver"
	racetests "github.com/ratelab/ratelab/race_tests"
	redisstore "github.com/ratelab/ratelab/redis_store"
	boundaryreport "github.com/ratelab/ratelab/window_boundary/report"
)

func cmdRace(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("race", stdout)
	procs := f.Int("procs", 8, fmt.Sprintf("stress: processes hitting one key at once (1 to %d)", harness.MaxWorkers))
	hits := f.Int("hits", 500, fmt.Sprintf("stress: hits per process (1 to %d)", maxHits))
	stable := f.Bool("stable", false, "leave out throughput and timings, which differ from run to run")
	figures := f.String("figures", "", "run only the four pitfalls, write their sequence diagrams into this directory and exit")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if err := checkSizes("-procs", *procs, harness.MaxWorkers, "-hits", *hits, maxHits); err != nil {
		return 0, err
	}
	dir, cleanup, err := scratch("race")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	if *figures != "" {
		figs, err := racetests.Figures(dir)
		if err != nil {
			return 0, err
		}
		return exitOK, racetests.WriteFigures(figs, *figures)
	}
	progress := progressTo(stderr, *stable)
	rep, err := racetests.Demo(dir, *procs, *hits, progress)
	if err != nil {
		return 0, err
	}
	rep.Print(stdout, !*stable)
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, rep.Pass(), "every claim held; lock-free stress figures are shown, not claimed"), nil
}

func cmdSchedules(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("schedules", stdout)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	dir, cleanup, err := scratch("schedules")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	results, err := racetests.Schedules(dir)
	if err != nil {
		return 0, err
	}
	rows := make([]claim.Claim, len(results))
	for i, r := range results {
		rows[i] = r.Claim()
	}
	claim.Table(stdout, "two processes, every schedule", rows)
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, claim.All(rows), "every schedule the kernel allows was run; each row is as claimed"), nil
}

func cmdBoundary(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("boundary", stdout)
	def := boundaryreport.DefaultConfig()
	burst := f.Int("burst", def.Burst, "GCRA: requests that may come early (1 to -limit)")
	seed := f.Uint64("seed", def.Seed, "seed of the random traffic")
	procs := f.Bool("processes", true, "also run the edge pattern across processes through the file store")
	svg := f.String("svg", "", "write the chart to this file and exit")
	weightSVG := f.String("weight-svg", "", "write the sliding counter's weighting chart to this file and exit")
	f.limitFlag().windowFlag()
	f.Lookup("limit").Usage = fmt.Sprintf("hits allowed per window (1 to %d)", ratelab.MaxLogLimit)
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if f.limit > ratelab.MaxLogLimit { // and the traffic, 2 × limit a window, is kept in memory
		return 0, usagef("-limit %d: at most %d, the sliding log's largest", f.limit, ratelab.MaxLogLimit)
	}
	if !f.isSet("burst") {
		*burst = min(*burst, f.limit) // the default, for a limit below it
	}
	if *svg != "" || *weightSVG != "" {
		if err := onlyReads(f.FlagSet, "-svg and -weight-svg", "svg", "weight-svg", "limit", "window", "burst", "seed"); err != nil {
			return 0, err
		}
	}
	if *burst < 1 || *burst > f.limit {
		return 0, usagef("-burst %d must be from 1 to -limit %d", *burst, f.limit)
	}
	c := boundaryreport.Config{Limit: f.limit, Window: f.window, Burst: *burst, Seed: *seed, T0: def.T0}
	for _, chart := range []struct {
		file  string
		write func(io.Writer, boundaryreport.Config) error
	}{{*svg, boundaryreport.WriteSVG}, {*weightSVG, boundaryreport.WriteWeightSVG}} {
		if chart.file == "" {
			continue
		}
		var b bytes.Buffer
		if err := chart.write(&b, c); err != nil {
			return 0, err
		}
		if err := os.WriteFile(chart.file, b.Bytes(), 0o644); err != nil {
			return 0, err
		}
	}
	if *svg != "" || *weightSVG != "" {
		return exitOK, nil
	}
	if *procs {
		dir, cleanup, err := scratch("boundary")
		if err != nil {
			return 0, err
		}
		defer cleanup()
		c.Dir = dir
	}
	rep, err := boundaryreport.Demo(c)
	if err != nil {
		return 0, err
	}
	rep.Print(stdout)
	return claim.Verdict(stdout, rep.Pass(), boundaryreport.Claim), nil
}

func cmdBench(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("bench", stdout)
	out := f.String("o", "", "write the Markdown report to this file (default: standard output)")
	quick := f.Bool("quick", false, "a short run, for checking that it works")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	dir, cleanup, err := scratch("bench")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	o := bench.Default(dir)
	o.Progress = stderr
	if *quick {
		o.Rounds, o.PerRound, o.Procs, o.HitsEach, o.Repeats = 1, 50, []int{1, 2}, 20, 1
	}
	res, err := bench.Run(o)
	if err != nil {
		return 0, err
	}
	if *out == "" {
		res.Markdown(stdout)
		return exitOK, nil
	}
	var buf bytes.Buffer
	res.Markdown(&buf)
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		return 0, err
	}
	fmt.Fprintln(stderr, "wrote", *out)
	res.WriteTargets(stdout)
	return exitOK, nil
}

// cmdRedis runs the chapter "Beyond one host": two hosts behind one
// front with files and with Redis, then Redis's pitfalls and a failover.
func cmdRedis(args []string, stdout, stderr io.Writer) (int, error) {
	f := newFlags("redis", stdout)
	url := f.String("redis", "", "a Redis server to use (default: start a private redis-server)")
	stable := f.Bool("stable", false, "leave out wall times, so that runs with -at print the same bytes")
	svg := f.String("svg", "", "run only the failover on private servers, write its chart to this file and exit")
	f.workloadFlags(130).limitFlag().windowFlag().atFlag()
	f.IntVar(&f.workers, "workers", 2, "worker processes per pool or host (> 0)")
	if err := f.parse(args); err != nil {
		return 0, err
	}
	if *svg != "" {
		if err := onlyReads(f.FlagSet, "-svg", "svg"); err != nil {
			return 0, err
		}
		return failoverFigure(*svg)
	}
	app := harness.App{Limit: f.limit, Window: f.window}
	var err error
	if app.Now, err = f.atOrZero(); err != nil {
		return 0, err
	}
	client, closeRedis, err := redisOrPrivate(url)
	if err != nil {
		return 0, err
	}
	defer closeRedis()
	dir, cleanup, err := scratch("redis")
	if err != nil {
		return 0, err
	}
	defer cleanup()
	ctx := context.Background()
	reset := func() error { return client.FlushDB(ctx).Err() }
	progress := progressTo(stderr, *stable)
	rep, err := beyondonehost.RedisDemo(ctx, app, f.workers, f.load, dir, *url, reset, progress)
	if err != nil {
		return 0, err
	}
	printHarnessReport(stdout, rep, *stable)
	if err := reset(); err != nil {
		return 0, err
	}
	lessons, err := redisLessons(ctx, client, stdout, progress)
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(stdout)
	return claim.Verdict(stdout, rep.Pass() && lessons, "every row shows what the demo claims"), nil
}

// redisOrPrivate returns a client of the Redis at *url, or of a private
// redis-server whose URL it stores in *url when *url is empty, and what
// closes both.
func redisOrPrivate(url *string) (redis.UniversalClient, func(), error) {
	stop := func() {}
	if *url == "" {
		srv, err := redisserver.Start()
		if err != nil {
			return nil, nil, err
		}
		*url, stop = srv.URL(), srv.Stop
	}
	client, err := redisstore.NewClient(*url, 2*time.Second)
	if err != nil {
		stop()
		return nil, nil, usagef("%v", err)
	}
	return client, func() { client.Close(); stop() }, nil
}

// redisLessons prints the tables of Redis's pitfalls, on client's server,
// and of the failover, on private pairs, and reports whether every row
// showed what it claims.
func redisLessons(ctx context.Context, client redis.Cmdable, stdout, progress io.Writer) (bool, error) {
	pitfalls, err := beyondonehost.Pitfalls(ctx, client)
	if err != nil {
		return false, err
	}
	fmt.Fprintln(stdout)
	claim.Table(stdout, "Redis pitfall", pitfalls)
	if progress != nil {
		fmt.Fprintln(progress, "failover: a private primary and replica, twice …")
	}
	runs, err := beyondonehost.Failover(ctx)
	if err != nil {
		return false, err
	}
	var failover []beyondonehost.Lesson
	for _, r := range runs {
		failover = append(failover, r.Lesson())
	}
	fmt.Fprintf(stdout, "\nfailover: %d per hour, the replica cut off, the primary killed, the replica promoted\n\n", beyondonehost.FailoverLimit)
	claim.Table(stdout, "Redis failover", failover)
	return claim.All(pitfalls) && claim.All(failover), nil
}

// failoverFigure runs the failover demonstration and writes its chart.
func failoverFigure(name string) (int, error) {
	runs, err := beyondonehost.Failover(context.Background())
	if err != nil {
		return 0, err
	}
	var b bytes.Buffer
	if err := beyondonehost.WriteFailoverSVG(&b, runs); err != nil {
		return 0, err
	}
	return exitOK, os.WriteFile(name, b.Bytes(), 0o644)
}
