//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/ratelab/ratelab/internal/lab/stress"
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
	n, err := ReadCount(path)
	if err != nil {
		return res, fmt.Errorf("racetests: read final count: %w", err)
	}
	res.Counted = n
	return res, nil
}
