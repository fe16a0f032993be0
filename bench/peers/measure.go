package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// perHit makes perRound hits of each variant in turn, rounds times, and
// returns the nanoseconds per hit of each variant in each round, and what
// each call cost Redis itself in that round (admin reads it between
// rounds, untimed): the cost that bounds the hits per second of one hot
// key.
func perHit(admin *redis.Client, fns []hit, rounds, perRound int) (ns, server [][]float64, err error) {
	ctx := context.Background()
	server = make([][]float64, len(fns))
	for i := range server {
		server[i] = make([]float64, rounds)
	}
	ns, err = inTurns(rounds, len(fns), func(r, i int) (float64, error) {
		if err := admin.ConfigResetStat(ctx).Err(); err != nil {
			return 0, err
		}
		key := fmt.Sprintf("per:%d:%d", r, i)
		start := time.Now()
		for range perRound {
			if err := fns[i](ctx, key); err != nil {
				return 0, fmt.Errorf("%s: %w", variants[i], err)
			}
		}
		took := time.Since(start)
		var err error
		server[i][r], err = evalshaMicros(ctx, admin)
		return float64(took.Nanoseconds()) / float64(perRound), err
	})
	return ns, server, err
}

// inTurns measures each of n variants in turn, rounds times, each round
// starting with the next variant so that no variant always goes first,
// and returns the figures by variant, then round.
func inTurns(rounds, n int, measure func(round, variant int) (float64, error)) ([][]float64, error) {
	figs := make([][]float64, n)
	for i := range figs {
		figs[i] = make([]float64, rounds)
	}
	for r := range rounds {
		for j := range n {
			i := (r + j) % n
			f, err := measure(r, i)
			if err != nil {
				return nil, err
			}
			figs[i][r] = f
		}
	}
	return figs, nil
}

// allocsPerHit returns the Go allocations of one hit of each variant, in
// the mean over n hits.
func allocsPerHit(fns []hit, n int) ([]float64, error) {
	ctx := context.Background()
	allocs := make([]float64, len(fns))
	for i, f := range fns {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range n {
			if err := f(ctx, fmt.Sprintf("allocs:%d", i)); err != nil {
				return nil, err
			}
		}
		runtime.ReadMemStats(&after)
		allocs[i] = float64(after.Mallocs-before.Mallocs) / float64(n)
	}
	return allocs, nil
}

// contention runs procs processes of each variant on one key, in turns,
// repeats times, and returns the hits per second of each variant in each
// repeat.
func contention(url string, procs, hits, repeats int) ([][]float64, error) {
	return inTurns(repeats, len(variants), func(rep, i int) (float64, error) {
		h, err := contend(variants[i], url, procs, hits, rep)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", variants[i], err)
		}
		return h, nil
	})
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

// median is the middle of xs, or the mean of its two middles.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}
