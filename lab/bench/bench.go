//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

// Package bench measures what the file store costs and writes the table of
// docs/performance.md. Every comparison is a ratio of figures measured in
// the same run, because the machines this runs on are shared and noisy and
// absolute times drift.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/floor"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/stress"
)

// Options size a run.
type Options struct {
	Rounds    int   // rounds of the per-hit loop; the median is reported
	PerRound  int   // hits per variant per round
	Procs     []int // process counts of the throughput table
	HitsEach  int   // hits per process in the throughput runs
	Repeats   int   // throughput runs per cell, taking turns; medians are reported
	Dir       string
	Progress  io.Writer
	Timestamp time.Time
}

// Default is the full run of make bench.
func Default(dir string) Options {
	return Options{Rounds: 9, PerRound: 4000, Procs: []int{1, 2, 4, 8, 16}, HitsEach: 3000, Repeats: 7, Dir: dir, Timestamp: time.Now()}
}

// PerHit is the in-process cost of one hit, median over rounds.
type PerHit struct {
	Memory, Floor time.Duration
	// Store is the file store's cost per algorithm, in ratelab.Algorithms'
	// order, and OverFloor each one's median ratio to the floor.
	Store     []time.Duration
	OverFloor []float64
	// TruncFirstOverStore compares the original's write order with the
	// store's fixed window, in a loop of their own.
	TruncFirstOverStore float64
	// Redis is one hit of the Redis store over loopback, measured in turns
	// with the file store; zero when redis-server is not installed.
	Redis, RedisStore time.Duration
	RedisOverStore    float64
}

// Throughput is one line of the cross-process table.
type Throughput struct {
	Procs                             int
	HotBounded, HotBlocking, Distinct float64 // hits per second, medians
	BoundedOverBlocking               float64 // median of the runs' ratios
	// P99Bounded and P99Blocking are a hit's 99th percentile on the hot
	// key (stress.P99), medians over the runs.
	P99Bounded, P99Blocking time.Duration
}

// Result is a whole run.
type Result struct {
	Machine    string
	Options    Options
	PerHit     PerHit
	Throughput []Throughput
	Features   []Feature
	// Sleep20us is how long a sleep of 20 µs asked of Go's timers took in
	// this process, the median of 200: what the bounded lock wait's
	// shortest sleep really lasts.
	Sleep20us time.Duration
	Databases []Database
}

// Run measures everything Options ask for.
func Run(o Options) (Result, error) {
	res := Result{Machine: machine(o.Dir), Options: o}
	say := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	say("per-hit costs: %d rounds × %d hits of each variant …", o.Rounds, o.PerRound)
	ph, err := perHit(o)
	if err != nil {
		return res, err
	}
	res.PerHit = ph
	say("operator features: %d rounds × %d requests of each …", o.Rounds, o.PerRound)
	if res.Features, err = features(o); err != nil {
		return res, err
	}
	if redisserver.Available() {
		say("redis: %d rounds × %d hits, in turns with the file store …", o.Rounds, o.PerRound)
		if err := perHitRedis(o, &res.PerHit); err != nil {
			return res, err
		}
	} else {
		say("redis-server not found: the Redis row is left out (install: %s)", redisserver.InstallHint)
	}
	if res.Databases, err = databases(o, say); err != nil {
		return res, err
	}
	res.Sleep20us = sleepOf(20*time.Microsecond, 200)
	for _, n := range o.Procs {
		say("throughput with %d process(es) × %d hits, %d runs of each …", n, o.HitsEach, o.Repeats)
		t, err := throughputRow(o, n)
		if err != nil {
			return res, err
		}
		res.Throughput = append(res.Throughput, t)
	}
	return res, nil
}

// throughputRow is the table's line for procs processes: o.Repeats runs
// of the three kinds, taking turns.
func throughputRow(o Options, procs int) (Throughput, error) {
	var bounded, blocking, distinct, ratio, p99Bounded, p99Blocking []float64
	for range max(o.Repeats, 1) {
		var run [3]stress.Result
		for i, mode := range []stress.FlockMode{stress.Bounded, stress.Blocking, stress.Distinct} {
			var err error
			if run[i], err = throughput(o, mode, procs); err != nil {
				return Throughput{}, err
			}
		}
		bounded, blocking = append(bounded, run[0].HitsPerSecond()), append(blocking, run[1].HitsPerSecond())
		distinct, ratio = append(distinct, run[2].HitsPerSecond()), append(ratio, run[0].HitsPerSecond()/run[1].HitsPerSecond())
		p99Bounded, p99Blocking = append(p99Bounded, float64(run[0].P99)), append(p99Blocking, float64(run[1].P99))
	}
	return Throughput{Procs: procs,
		HotBounded: median(bounded), HotBlocking: median(blocking), Distinct: median(distinct),
		BoundedOverBlocking: median(ratio),
		P99Bounded:          time.Duration(median(p99Bounded)), P99Blocking: time.Duration(median(p99Blocking))}, nil
}

// sleepOf is how long time.Sleep(d) takes, the median of n.
func sleepOf(d time.Duration, n int) time.Duration {
	took := make([]float64, n)
	for i := range took {
		start := time.Now()
		time.Sleep(d)
		took[i] = float64(time.Since(start))
	}
	return time.Duration(median(took))
}

// throughput runs one stress run and checks that it lost nothing.
func throughput(o Options, mode stress.FlockMode, procs int) (stress.Result, error) {
	dir, err := os.MkdirTemp(o.Dir, "tp-")
	if err != nil {
		return stress.Result{}, err
	}
	defer os.RemoveAll(dir)
	s, err := stress.Flock(dir, mode, procs, o.HitsEach)
	if err == nil && s.Lost() != 0 {
		err = fmt.Errorf("bench: %s with %d processes lost %d hits", mode, procs, s.Lost())
	}
	return s, err
}

// inTurns runs fns in turn, one call each, perRound times per round, and
// returns each round's mean time per call of every fn: rounds[r][i].
// Taking turns inside every round is what lets ratios of the results
// compare the variants under the same conditions on a noisy machine.
func inTurns(rounds, perRound int, fns ...func() error) ([][]float64, error) {
	out := make([][]float64, rounds)
	for r := range out {
		sums := make([]time.Duration, len(fns))
		for range perRound {
			for i, fn := range fns {
				t := time.Now()
				if err := fn(); err != nil {
					return nil, err
				}
				sums[i] += time.Since(t)
			}
		}
		out[r] = make([]float64, len(fns))
		for i, d := range sums {
			out[r][i] = float64(d) / float64(perRound)
		}
	}
	return out, nil
}

// medianOf returns the median over rounds of f(round).
func medianOf(rounds [][]float64, f func(round []float64) float64) float64 {
	xs := make([]float64, len(rounds))
	for i, r := range rounds {
		xs[i] = f(r)
	}
	return median(xs)
}

// Rules are the rules every measured hit is taken under, one per
// algorithm, every hit allowed so that every hit writes: the fixed window
// and the counter with a limit never reached, the log and GCRA at 30 per
// minute with the clock stepping Step a hit, so the log holds its full 30.
func Rules() []ratelab.Rule {
	var rs []ratelab.Rule
	for _, a := range ratelab.Algorithms() {
		r := ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour, Algorithm: a}
		if a == ratelab.SlidingLog || a == ratelab.GCRA {
			r.Limit, r.Window = 30, time.Minute
		}
		rs = append(rs, r.Normalized())
	}
	return rs
}

// Step is how far the clock moves between measured hits: just over the
// 2 s that 30 per minute allows, so that the log's oldest entry has left
// the window when the next hit comes (at exactly 2 s the 31st hit would
// find 30 entries in the window and be refused).
const Step = 2*time.Second + time.Millisecond

// benchNow is the instant every measured hit starts from.
func benchNow() time.Time { return time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC) }

// writingHit is nil for a hit that was allowed, and so wrote: a refused
// hit may skip the write and would flatter the figures.
func writingHit(d ratelab.Decision, err error) error {
	if err == nil && !d.Allowed {
		err = fmt.Errorf("bench: a measured hit under %v was refused", d.Rule)
	}
	return err
}

// perHit measures the in-memory store, the syscall floor and the file
// store under every algorithm in turns, and reports medians. The
// original's truncate-first write runs in a loop of its own against the
// store's fixed window: on ext4 its writeback slows whatever runs next, so
// in the same loop it would inflate its neighbours.
func perHit(o Options) (PerHit, error) {
	store, err := fixedfilestore.New(o.Dir, fixedfilestore.Options{})
	if err != nil {
		return PerHit{}, err
	}
	defer store.Close()
	var mem brokeninmemory.Store
	dirfd, err := floor.OpenDir(o.Dir)
	if err != nil {
		return PerHit{}, err
	}
	defer syscall.Close(dirfd)
	state := algorithm.Fixed{Count: 17, ResetAt: benchNow().Unix() + 3600}.Append(nil)
	ctx, rules := context.Background(), Rules()
	now := benchNow()
	fns := []func() error{
		func() error { _, err := mem.TakeAt(ctx, rules[0], "k", now); return err },
		func() error { now = now.Add(Step); return floor.SyscallFloor(dirfd, "floor.json", state) },
	}
	for _, r := range rules {
		fns = append(fns, func() error { return writingHit(store.TakeAt(ctx, r, "k", now)) })
	}
	rounds, err := inTurns(o.Rounds, o.PerRound, fns...)
	if err != nil {
		return PerHit{}, err
	}
	at := func(i int) time.Duration {
		return time.Duration(medianOf(rounds, func(r []float64) float64 { return r[i] }))
	}
	ph := PerHit{Memory: at(0), Floor: at(1)}
	for i := range rules {
		ph.Store = append(ph.Store, at(2+i))
		ph.OverFloor = append(ph.OverFloor, medianOf(rounds, func(r []float64) float64 { return r[2+i] / r[1] }))
	}
	apart, err := inTurns(o.Rounds, o.PerRound,
		func() error { _, err := store.TakeAt(ctx, rules[0], "t", now); return err },
		func() error { return floor.TruncateFirst(dirfd, "orig.json", state) },
	)
	if err != nil {
		return PerHit{}, err
	}
	ph.TruncFirstOverStore = medianOf(apart, func(r []float64) float64 { return r[1] / r[0] })
	return ph, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// machine describes where the run happened: cores, CPU, the filesystem of
// the state directory, kernel and Go.
func machine(dir string) string {
	cpu := "unknown CPU"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return fmt.Sprintf("%d cores (%s), state on %s, %s %s, %s", runtime.NumCPU(), cpu, fsType(dir), runtime.GOOS, kernelRelease(), runtime.Version())
}
