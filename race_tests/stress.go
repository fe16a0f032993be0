//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/stress"
	"github.com/ratelab/ratelab/linearizability"
)

// StressModes returns the three ways the demonstration's stress run
// counts, in report order.
func StressModes() []string { return []string{"lock-free", "lock-free-truncate-first", "flock"} }

// StressResult is one stress run.
type StressResult = stress.Result

// Stress starts procs processes, holds them at a barrier until all are
// ready, releases them together, and lets each count hits hits on one key.
// For "flock" the processes use fixed_filestore (stress.Flock); the two
// lock-free modes use BrokenCounter without its lock.
func Stress(dir, mode string, procs, hits int) (StressResult, error) {
	if mode == "flock" {
		return stress.Flock(dir, stress.Bounded, procs, hits)
	}
	res := StressResult{Mode: mode, Procs: procs, Hits: hits, Expected: int64(procs * hits)}
	path := filepath.Join(dir, "state.json")
	var err error
	if _, res.Wall, err = stress.Run(roleStress, procs, "RATELAB_RACE_PATH="+path, "RATELAB_RACE_MODE="+mode, "RATELAB_RACE_HITS="+strconv.Itoa(hits)); err != nil {
		return res, err
	}
	if res.Counted, res.Torn, err = finalCount(path); err != nil {
		return res, fmt.Errorf("racetests: read final count: %w", err)
	}
	return res, nil
}

// finalCount reads the count lock-free hitters left at path as they read
// it: a state torn by writers without a lock (truncate-first can leave a
// shorter object over a longer one's tail) is a new window, 0.
func finalCount(path string) (n int64, torn bool, err error) {
	n, err = ReadCount(path)
	var unread *fs.PathError
	if errors.As(err, &unread) {
		return 0, false, err
	}
	return n, err != nil, nil
}

// RecordCounter starts procs processes of BrokenCounter, with its lock or
// without, holds them at a barrier until all are ready, releases them
// together, and lets each take hits hits on one key, every hit recorded
// (package linearizability) in a history directory made in dir; it
// returns the history. Every hit is at the same instant, under CountRule,
// whose limit no run reaches: each decision tells its client the count.
//
// Without the lock, each process's first hit waits after its read until
// every process has read, so that every run loses updates — two processes
// told the same count — and not only the runs the scheduler interleaves;
// the hits after the first race as they come.
func RecordCounter(dir string, lock bool, procs, hits int) (linearizability.History, error) {
	mode := "recorded-lock-free"
	if lock {
		mode = "recorded-flock"
	}
	path := filepath.Join(dir, "recorded.json")
	return linearizability.Record(dir, func(hdir string) error {
		_, _, err := stress.Run(roleStress, procs, "RATELAB_RACE_PATH="+path, "RATELAB_RACE_MODE="+mode,
			"RATELAB_RACE_HITS="+strconv.Itoa(hits), "RATELAB_HISTORY="+hdir, "RATELAB_RACE_PROCS="+strconv.Itoa(procs))
		return err
	})
}

// recordedHitter returns one hit of a BrokenCounter on path, recorded in
// the history directory RATELAB_HISTORY names.
func recordedHitter(path string, lock bool) (func() error, error) {
	rec, err := linearizability.NewRecorder(os.Getenv("RATELAB_HISTORY"), 0)
	if err != nil {
		return nil, err
	}
	c := &BrokenCounter{Path: path, Lock: lock}
	if !lock {
		procs, err := strconv.Atoi(os.Getenv("RATELAB_RACE_PROCS"))
		if err != nil {
			return nil, fmt.Errorf("RATELAB_RACE_PROCS: %w", err)
		}
		var once sync.Once
		c.AfterRead = func(int64) { once.Do(func() { barrier(os.Getenv("RATELAB_HISTORY"), procs) }) }
	}
	s := rec.Store(counterStore{c})
	ctx, r := context.Background(), CountRule()
	return func() error { _, err := s.TakeAt(ctx, r, StressKey, demoNow()); return err }, nil
}

// barrier marks this process as arrived in dir and returns when procs
// processes have (or after 10 s, when one never came: the run is then
// only as lossy as the scheduler makes it, and says so if it is not).
func barrier(dir string, procs int) {
	os.WriteFile(filepath.Join(dir, "arrived-"+strconv.Itoa(os.Getpid())), nil, 0o600)
	poll.Until(10*time.Second, time.Millisecond, func() error {
		m, err := filepath.Glob(filepath.Join(dir, "arrived-*"))
		if err == nil && len(m) < procs {
			err = fmt.Errorf("%d of %d processes arrived", len(m), procs)
		}
		return err
	})
}

// counterStore is a BrokenCounter as a store of CountRule, so that its
// hits can be recorded: the decision of each is the fixed window's for the
// count it wrote.
type counterStore struct{ c *BrokenCounter }

// TakeAt takes one hit at now; r is CountRule, key is not used.
func (s counterStore) TakeAt(_ context.Context, r ratelab.Rule, _ string, now time.Time) (ratelab.Decision, error) {
	next, err := s.c.HitAt(now)
	if err != nil {
		return ratelab.Decision{}, err
	}
	return algorithm.FixedDecision(r.Normalized(), next.Count, next.ResetAt, now), nil
}
