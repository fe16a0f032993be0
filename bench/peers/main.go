// Command peers measures redis_store beside the Redis rate limiters a Go
// engineer would otherwise pick — go-redis/redis_rate (GCRA) and
// ulule/limiter's Redis store (fixed window) — and beside the least any
// script can cost, a trivial EVALSHA. It lives in a module of its own so
// that the peers never enter ratelab's go.mod.
//
//	go run . [-rounds 31] [-per-round 500] [-procs 8] [-hits 2000] [-repeats 7] [-o FILE]
//
// Every figure is a ratio measured in the same run against a private
// redis-server on loopback: per hit in one process, the variants take
// turns in every round; under contention, each variant runs procs
// processes released together on one key, in turns, and the median of
// the runs is reported. Each of issue #23's targets gets a line, on
// stdout and in the report: met or not met, the ratio and its spread. The
// command exits 0 either way; it fails only when it cannot measure.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/redisserver"
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
	rounds := flag.Int("rounds", 31, "rounds of the per-hit loop")
	perRound := flag.Int("per-round", 500, "hits per variant per round")
	procs := flag.Int("procs", 8, "processes in the contention runs")
	hits := flag.Int("hits", 2000, "hits per process in the contention runs")
	repeats := flag.Int("repeats", 7, "contention runs per variant")
	out := flag.String("o", "", "write the Markdown report here instead of stdout")
	flag.Parse()
	if err := run(*rounds, *perRound, *procs, *hits, *repeats, *out); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// hitter returns one hit of variant v, and what closes its client.
func hitter(v, url string) (hit, func(), error) {
	rdb, err := redisstore.NewClient(url, time.Second)
	if err != nil {
		return nil, nil, err
	}
	f, err := hitterOn(v, rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return f, func() { rdb.Close() }, nil
}

// hitterOn returns one hit of variant v through rdb.
func hitterOn(v string, rdb redis.UniversalClient) (hit, error) {
	switch v {
	case "evalsha-return-1":
		s := redis.NewScript("return 1")
		return func(ctx context.Context, key string) error { return s.Run(ctx, rdb, []string{key}).Err() }, nil
	case "ratelab-fixed", "ratelab-gcra":
		st, err := redisstore.New(rdb, redisstore.Options{})
		if err != nil {
			return nil, err
		}
		r := ratelab.Rule{Name: "bench", Limit: ratelab.MaxLimit, Window: time.Hour}
		if v == "ratelab-gcra" {
			r.Algorithm, r.Limit, r.Burst = ratelab.GCRA, 1000000, 1000000
		}
		return func(ctx context.Context, key string) error { _, err := st.Take(ctx, r, key); return err }, nil
	case "redis_rate":
		l := redis_rate.NewLimiter(rdb)
		lim := redis_rate.Limit{Rate: 1000000, Burst: 1000000, Period: time.Hour}
		return func(ctx context.Context, key string) error { _, err := l.Allow(ctx, key, lim); return err }, nil
	case "ulule":
		st, err := sredis.NewStoreWithOptions(rdb, limiter.StoreOptions{Prefix: "ulule"})
		if err != nil {
			return nil, err
		}
		l := limiter.New(st, limiter.Rate{Period: time.Hour, Limit: 1 << 40})
		return func(ctx context.Context, key string) error { _, err := l.Get(ctx, key); return err }, nil
	}
	return nil, fmt.Errorf("unknown variant %q", v)
}

// The variants' places in variants, for the targets.
const (
	evalsha = iota
	ratelabFixed
	ratelabGCRA
	redisRate
	ulule
)

// results are one run's figures, by variant: nanoseconds per hit in each
// round, Redis's own microseconds per call, Go allocations per hit, the
// client's own nanoseconds per hit with every reply canned, and hits per
// second under contention (procs processes) in each repeat.
type results struct {
	procs  int
	perHit [][]float64
	server [][]float64
	allocs []float64
	client []float64
	hps    [][]float64
}

func run(rounds, perRound, procs, hits, repeats int, outPath string) error {
	srv, err := redisserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	url := "redis://" + srv.Addr + "/0"
	fns := make([]hit, len(variants))
	for i, v := range variants {
		f, closeIt, err := hitter(v, url)
		if err != nil {
			return err
		}
		defer closeIt()
		fns[i] = f
	}
	res := results{procs: procs}
	admin := srv.Client()
	defer admin.Close()
	if res.perHit, res.server, err = perHit(admin, fns, rounds, perRound); err != nil {
		return err
	}
	if res.allocs, err = allocsPerHit(fns, perRound); err != nil {
		return err
	}
	if res.client, err = clientWork(); err != nil {
		return err
	}
	if res.hps, err = contention(url, procs, hits, repeats); err != nil {
		return err
	}
	return report(outPath, res, rounds, perRound, procs, hits, repeats)
}

// hit is one hit of a variant on key.
type hit = func(ctx context.Context, key string) error
