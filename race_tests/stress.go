//go:build linux || darwin

package racetests

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
)

// StressModes returns the three ways the demonstration's stress run
// counts, in report order.
func StressModes() []string { return []string{"lock-free", "lock-free-truncate-first", "flock"} }

// StressResult is one stress run.
type StressResult struct {
	Mode              string
	Procs, Hits       int
	Expected, Counted int64
	Wall              time.Duration
}

// Lost is how many hits the file does not show.
func (r StressResult) Lost() int64 { return r.Expected - r.Counted }

// HitsPerSecond is the throughput of the whole run.
func (r StressResult) HitsPerSecond() float64 { return float64(r.Expected) / r.Wall.Seconds() }

// Stress modes beyond the demonstration's three, for the benchmark: the
// flock store with a plain blocking lock instead of the bounded wait, and
// with every process on a key of its own.
const (
	StressFlockBlocking = "flock-blocking"
	StressFlockDistinct = "flock-distinct"
)

// Stress starts procs processes, holds them at a barrier until all are
// ready, releases them together, and lets each count hits hits on one key.
// For "flock" the processes use fixed_filestore; the two lock-free modes
// use BrokenCounter without its lock. env is added to every child's
// environment (the benchmark sets GOMAXPROCS with it).
func Stress(dir, mode string, procs, hits int, env ...string) (StressResult, error) {
	res := StressResult{Mode: mode, Procs: procs, Hits: hits, Expected: int64(procs * hits)}
	path := filepath.Join(dir, "state.json")
	flockMode := strings.HasPrefix(mode, "flock")
	if flockMode {
		path = dir
	}
	children := make([]*childproc.Proc, procs)
	defer func() {
		for _, c := range children {
			if c != nil {
				c.Kill()
			}
		}
	}()
	for i := range children {
		c, err := child(fmt.Sprintf("stress-%d", i), roleStress, path,
			append([]string{"RATELAB_RACE_MODE=" + mode, "RATELAB_RACE_HITS=" + strconv.Itoa(hits)}, env...)...)
		if err != nil {
			return res, err
		}
		children[i] = c
	}
	for _, c := range children {
		if _, err := c.Expect("ready"); err != nil {
			return res, err
		}
	}
	start := time.Now()
	for _, c := range children {
		if err := c.Send("go"); err != nil {
			return res, err
		}
	}
	for _, c := range children {
		if _, err := c.Expect("result hits=" + strconv.Itoa(hits)); err != nil {
			return res, err
		}
	}
	res.Wall = time.Since(start)
	if err := closeAll(children...); err != nil {
		return res, err
	}
	if flockMode { // every key's count, read under the store's own locks
		store, err := fixedfilestore.New(dir, fixedfilestore.Options{})
		if err != nil {
			return res, err
		}
		entries, err := store.Inspect()
		if err != nil {
			return res, err
		}
		for _, e := range entries {
			if e.Err != nil {
				return res, fmt.Errorf("racetests: read final count: %w", e.Err)
			}
			res.Counted += e.Fixed.Count
		}
		return res, nil
	}
	n, err := ReadCount(path)
	if err != nil {
		return res, fmt.Errorf("racetests: read final count: %w", err)
	}
	res.Counted = n
	return res, nil
}

// tempDir makes a fresh directory for one case under base.
func tempDir(base, name string) (string, error) {
	return os.MkdirTemp(base, name+"-")
}
