// Command peers measures redis_store beside the Redis rate limiters a Go
// engineer would otherwise pick — go-redis/redis_rate (GCRA) and
// ulule/limiter's Redis store (fixed window) — and beside the least any
// script can cost, a trivial EVALSHA. It lives in a module of its own so
// that the peers never enter ratelab's go.mod.
//
//	go run . [-rounds 7] [-per-round 2000] [-procs 8] [-hits 2000] [-o FILE]
//
// Every figure is a ratio measured in the same run against a private
// redis-server on loopback: per hit in one process, the variants take
// turns in every round; under contention, each variant runs procs
// processes released together on one key, in turns, and the median of
// the runs is reported.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/lab/redisserver"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// variants are the limiters compared, each one hit on key.
var variants = []string{"evalsha-return-1", "ratelab-fixed", "ratelab-gcra", "redis_rate", "ulule"}

func main() {
	if v := os.Getenv("PEERS_CHILD"); v != "" {
		if err := child(v, os.Getenv("PEERS_REDIS"), os.Getenv("PEERS_HITS")); err != nil {
			fmt.Fprintln(os.Stderr, "peers child:", err)
			os.Exit(2)
		}
		return
	}
	rounds := flag.Int("rounds", 7, "rounds of the per-hit loop")
	perRound := flag.Int("per-round", 2000, "hits per variant per round")
	procs := flag.Int("procs", 8, "processes in the contention runs")
	hits := flag.Int("hits", 2000, "hits per process in the contention runs")
	repeats := flag.Int("repeats", 5, "contention runs per variant")
	out := flag.String("o", "", "write the Markdown report here instead of stdout")
	flag.Parse()
	if err := run(*rounds, *perRound, *procs, *hits, *repeats, *out); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// hitter returns one hit of variant v on key.
func hitter(v, url string) (func(ctx context.Context, key string) error, func(), error) {
	rdb, err := redisstore.NewClient(url, time.Second)
	if err != nil {
		return nil, nil, err
	}
	closeIt := func() { rdb.Close() }
	switch v {
	case "evalsha-return-1":
		s := redis.NewScript("return 1")
		return func(ctx context.Context, key string) error { return s.Run(ctx, rdb, []string{key}).Err() }, closeIt, nil
	case "ratelab-fixed", "ratelab-gcra":
		st, err := redisstore.New(rdb, redisstore.Options{FailPolicy: ratelab.FailClosed})
		if err != nil {
			return nil, nil, err
		}
		r := ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour}
		if v == "ratelab-gcra" {
			r.Algorithm, r.Limit, r.Burst = ratelab.GCRA, 1000000, 1000000
		}
		return func(ctx context.Context, key string) error { _, err := st.Take(ctx, r, key); return err }, closeIt, nil
	case "redis_rate":
		l := redis_rate.NewLimiter(rdb)
		lim := redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Hour}
		return func(ctx context.Context, key string) error { _, err := l.Allow(ctx, key, lim); return err }, closeIt, nil
	case "ulule":
		st, err := sredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "ulule"})
		if err != nil {
			return nil, nil, err
		}
		l := limiter.New(st, limiter.Rate{Period: time.Hour, Limit: 1 << 40})
		return func(ctx context.Context, key string) error { _, err := l.Get(ctx, key); return err }, closeIt, nil
	}
	return nil, nil, fmt.Errorf("unknown variant %q", v)
}

func run(rounds, perRound, procs, hits, repeats int, outPath string) error {
	srv, err := redisserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	url := "redis://" + srv.Addr + "/0"
	ctx := context.Background()

	// Per hit, in one process, in turns.
	fns := make([]func(context.Context, string) error, len(variants))
	for i, v := range variants {
		f, closeIt, err := hitter(v, url)
		if err != nil {
			return err
		}
		defer closeIt()
		fns[i] = f
	}
	per := make([][]float64, len(variants))
	for r := range rounds {
		for i, f := range fns {
			key := fmt.Sprintf("per:%d:%d", r, i)
			start := time.Now()
			for range perRound {
				if err := f(ctx, key); err != nil {
					return fmt.Errorf("%s: %w", variants[i], err)
				}
			}
			per[i] = append(per[i], float64(time.Since(start).Nanoseconds())/float64(perRound))
		}
	}

	// Server time per call: what each script costs Redis itself, which
	// bounds the hits per second of one hot key.
	admin := srv.Client()
	defer admin.Close()
	server := make([]float64, len(variants))
	for i, f := range fns {
		if err := admin.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		for range perRound {
			if err := f(ctx, fmt.Sprintf("srv:%d", i)); err != nil {
				return err
			}
		}
		if server[i], err = evalshaMicros(ctx, admin); err != nil {
			return err
		}
	}

	// Contention: procs processes on one key, released together.
	hps := make([][]float64, len(variants))
	for rep := range repeats {
		for i, v := range variants {
			h, err := contend(v, url, procs, hits, rep)
			if err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
			hps[i] = append(hps[i], h)
		}
	}

	w := io.Writer(os.Stdout)
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	if outPath != "" {
		fmt.Fprintf(w, "<!-- Generated by `make bench` (bench-peers) on %s. Figures are from that machine and that day; run it again on yours. -->\n\n", time.Now().UTC().Format("2006-01-02"))
		fmt.Fprintf(w, "# Redis: redis_store beside its peers\n\n")
		fmt.Fprintf(w, "A private redis-server on loopback, %d cores, %s. Per hit: %d rounds of %d hits per variant, in turns, median. Contention: %d processes on one key, %d hits each, released together, %d runs per variant in turns, median. Every limit is set high enough that every hit is allowed. Made by [bench/peers](../bench/peers/main.go), a module of its own so that the peers stay out of ratelab's go.mod.\n\n",
			runtime.NumCPU(), runtime.Version(), rounds, perRound, procs, hits, repeats)
	}
	fmt.Fprintf(w, "| variant | per hit, one process | ÷ trivial EVALSHA | Redis's own time per call | %d processes, one key: hits/s | ÷ ratelab-fixed |\n", procs)
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: |")
	floor, ours := median(per[0]), median(hps[1])
	for i, v := range variants {
		fmt.Fprintf(w, "| %s | %.1f µs | %.2f × | %.1f µs | %.0f | %.2f × |\n", v, median(per[i])/1000, median(per[i])/floor, server[i], median(hps[i]), median(hps[i])/ours)
	}
	if outPath != "" {
		fmt.Fprintf(w, "\nRedis's own time per call is `usec_per_call` of EVALSHA in `INFO commandstats`, over %d hits of each variant alone: the script's cost to the server, which one hot key cannot go faster than.\n", perRound)
	}
	return nil
}

// evalshaMicros reads the server's mean time per EVALSHA since the last
// CONFIG RESETSTAT.
func evalshaMicros(ctx context.Context, admin *redis.Client) (float64, error) {
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:"); ok {
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "usec_per_call="); ok {
					return strconv.ParseFloat(v, 64)
				}
			}
		}
	}
	return 0, fmt.Errorf("no cmdstat_evalsha in INFO commandstats")
}

// contend runs procs children of variant v, each making hits hits on one
// key once all are ready, and returns the hits per second of the whole run.
func contend(v, url string, procs, hits, rep int) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	type proc struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var ps []proc
	defer func() {
		for _, p := range ps {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	}()
	key := fmt.Sprintf("hot:%s:%d", v, rep)
	for range procs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "PEERS_CHILD="+v+"|"+key, "PEERS_REDIS="+url, "PEERS_HITS="+strconv.Itoa(hits))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return 0, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return 0, err
		}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		p := proc{cmd, stdin, bufio.NewReader(stdout)}
		ps = append(ps, p)
		if line, err := p.out.ReadString('\n'); err != nil || line != "ready\n" {
			return 0, fmt.Errorf("child not ready: %q %v", line, err)
		}
	}
	start := time.Now()
	for _, p := range ps {
		fmt.Fprintln(p.stdin, "go")
	}
	for _, p := range ps {
		if line, err := p.out.ReadString('\n'); err != nil || line != "done\n" {
			return 0, fmt.Errorf("child failed: %q %v", line, err)
		}
	}
	return float64(procs*hits) / time.Since(start).Seconds(), nil
}

func child(spec, url, hitsEnv string) error {
	v, key, _ := strings.Cut(spec, "|")
	hits, err := strconv.Atoi(hitsEnv)
	if err != nil {
		return err
	}
	f, closeIt, err := hitter(v, url)
	if err != nil {
		return err
	}
	defer closeIt()
	ctx := context.Background()
	if err := f(ctx, key+":warm"); err != nil { // connect and load the script first
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	for range hits {
		if err := f(ctx, key); err != nil {
			return err
		}
	}
	fmt.Println("done")
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
