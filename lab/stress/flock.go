//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stress

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/childproc"
)

// FlockMode is how the file store's hitters take their lock, or share keys.
type FlockMode string

const (
	Bounded  FlockMode = "flock"          // the store as shipped: the bounded lock wait, one hot key
	Blocking FlockMode = "flock-blocking" // a plain blocking flock(2), one hot key
	Distinct FlockMode = "flock-distinct" // the bounded wait, a key per process
)

// roleFlock is the file store's hitter.
const roleFlock = "stress/flock"

// Roles are this package's child roles, for childproc.RunIfChild.
func Roles() childproc.Roles { return childproc.Roles{roleFlock: flockChild} }

// Key and Rule are what every hitter counts: the original's key and
// window, with a limit no run reaches, so that a count can be read back
// from any decision as Limit − Remaining.
const Key = "ip:203.0.113.7"

// Rule is the rule every hitter counts under.
func Rule() ratelab.Rule {
	return ratelab.Rule{Name: "demo-start", Limit: ratelab.MaxLimit, Window: time.Hour}.Normalized()
}

// Now is the instant every hitter counts at, so that no window ends
// during a run.
func Now() time.Time { return time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC) }

// Result is one run.
type Result struct {
	Mode              string
	Procs, Hits       int
	Expected, Counted int64
	Wall              time.Duration
	P99               time.Duration // a hitter's 99th percentile of a hit's time (P99)
	// Torn says the final state could not be read — writers without a
	// lock left it torn — and was counted as a new window's, 0, as the
	// hitters read it.
	Torn bool
}

// Lost is how many hits the state does not show.
func (r Result) Lost() int64 { return r.Expected - r.Counted }

// HitsPerSecond is the throughput of the whole run.
func (r Result) HitsPerSecond() float64 { return float64(r.Expected) / r.Wall.Seconds() }

// Flock runs procs hitters of the file store in dir, hits hits each, in
// mode, released together, and counts what the state files hold, read
// under the store's own locks.
func Flock(dir string, mode FlockMode, procs, hits int) (Result, error) {
	res := Result{Mode: string(mode), Procs: procs, Hits: hits, Expected: int64(procs * hits)}
	lines, wall, err := Run(roleFlock, procs, "STRESS_DIR="+dir, "STRESS_MODE="+string(mode), "STRESS_HITS="+strconv.Itoa(hits))
	if err != nil {
		return res, err
	}
	res.Wall, res.P99 = wall, P99(lines)
	store, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return res, err
	}
	defer store.Close()
	entries, err := store.Inspect()
	if err != nil {
		return res, err
	}
	for _, e := range entries {
		if e.Err != nil {
			return res, fmt.Errorf("stress: read final count: %w", e.Err)
		}
		res.Counted += e.Fixed.Count
	}
	return res, nil
}

// flockChild is one hitter: ready, wait for go, hit, report.
func flockChild() error {
	hits, err := strconv.Atoi(os.Getenv("STRESS_HITS"))
	if err != nil {
		return fmt.Errorf("STRESS_HITS: %w", err)
	}
	wait, key := time.Minute, Key
	switch FlockMode(os.Getenv("STRESS_MODE")) {
	case Bounded:
	case Blocking:
		wait = fixedfilestore.WaitForever
	case Distinct:
		key = fmt.Sprintf("%s/pid-%d", Key, os.Getpid())
	default:
		return fmt.Errorf("unknown STRESS_MODE %q", os.Getenv("STRESS_MODE"))
	}
	s, err := fixedfilestore.New(os.Getenv("STRESS_DIR"), fixedfilestore.Options{LockWait: wait})
	if err != nil {
		return err
	}
	defer s.Close()
	return Hit(hits, func() error { return Counted(s.TakeAt(context.Background(), Rule(), key, Now())) })
}
