package beyondonehost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/barchart"
	"github.com/ratelab/ratelab/lab/redisserver"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// FailoverMode is one way of running the failover demonstration.
type FailoverMode int

// The three ways: replication as it is, WAIT after every script, and the
// primary configured with min-replicas-to-write 1 (min-replicas-max-lag 1).
const (
	Asynchronous FailoverMode = iota
	WaitForReplica
	MinReplicasToWrite
)

// modeNames name the modes as the demonstration's table does.
var modeNames = [...]string{
	Asynchronous:       "replication asynchronous",
	WaitForReplica:     "WAIT for 1 replica (fail-closed)",
	MinReplicasToWrite: "min-replicas-to-write 1 (fail-closed)",
}

// String names the mode as the demonstration's table does.
func (m FailoverMode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("FailoverMode(%d)", int(m))
}

// FailoverRun is one run of the failover demonstration: the hits the
// primary allowed before it died (all lost with it) and those the
// promoted replica allowed after.
type FailoverRun struct {
	Mode          FailoverMode
	Before, After int
}

// String is the run as the table shows it: allowed before, after, and both.
func (r FailoverRun) String() string {
	return fmt.Sprintf("%d allowed before, %d after: %d in one window", r.Before, r.After, r.Before+r.After)
}

// FailoverLimit is the failover demonstration's limit: 30 per hour.
const FailoverLimit = 30

// !+failover

// Failover shows, on a real primary and replica, what asynchronous
// replication does to a rate limit. The replica is paused, as a replica
// behind a slow link; a client hits the primary until the limit refuses
// it; the primary dies; the replica is promoted; the client goes on
// against it. The primary acknowledged every hit, the replica never
// received them, so the failover forgets them all: the limit is exceeded
// by as many. With WaitReplicas the store asks Redis to WAIT for the
// replica after each script: while the replica is paused no hit is
// confirmed, and a fail-closed store refuses them (503) instead of
// allowing hits a failover can forget. A primary configured with
// min-replicas-to-write refuses the writes itself once the replica has
// been silent too long (NOREPLICAS), with the same outcome. Each run
// starts a private primary and replica of its own.
func Failover(ctx context.Context) ([]FailoverRun, error) {
	var out []FailoverRun
	for _, mode := range []FailoverMode{Asynchronous, WaitForReplica, MinReplicasToWrite} {
		before, after, err := failoverRun(ctx, mode, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, FailoverRun{Mode: mode, Before: before, After: after})
	}
	return out, nil
}

// Lesson is the run as a row of the demonstration's table: replication
// as it is lets the limit through twice, either mitigation lets it
// through once.
func (r FailoverRun) Lesson() Lesson {
	want := FailoverRun{Mode: r.Mode, After: FailoverLimit}
	if r.Mode == Asynchronous {
		want.Before = FailoverLimit
	}
	return Lesson{Case: "failover, " + r.Mode.String(), Expected: want.String(), Observed: r.String()}
}

// !-failover

// WriteFailoverSVG draws runs as the chapter's figure: one bar per run,
// the hits the old primary allowed beside those the promoted replica
// allowed, against the limit. The same runs give the same bytes.
func WriteFailoverSVG(w io.Writer, runs []FailoverRun) error {
	c := barchart.Chart{
		Title:    fmt.Sprintf("Hits allowed in one window across a failover, limit %d per hour", FailoverLimit),
		Segments: []string{"allowed by the old primary, lost with it", "allowed by the promoted replica"},
		Limit:    FailoverLimit,
		Unit:     "hits allowed to one client in one window",
	}
	for _, r := range runs {
		c.Bars = append(c.Bars, barchart.Bar{Label: r.Mode.String(), Values: []int{r.Before, r.After}})
	}
	return barchart.Write(w, c)
}

// failoverRun makes the hits of one run on a fresh pair: before the
// failover on the primary with the replica paused, after it on the
// promoted replica. wrap, if not nil, wraps each store the hits go
// through.
func failoverRun(ctx context.Context, mode FailoverMode, wrap func(ratelab.Store) ratelab.Store) (before, after int, err error) {
	wait := 0
	if mode == WaitForReplica {
		wait = 1
	}
	var args []string
	if mode == MinReplicasToWrite {
		args = []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"}
	}
	pair, err := redisserver.StartPair(args...)
	if err != nil {
		return 0, 0, err
	}
	defer pair.Stop()
	if err := pair.PauseReplica(); err != nil {
		return 0, 0, err
	}
	if mode == MinReplicasToWrite {
		if err := pair.WaitReplicaLagging(10 * time.Second); err != nil {
			return 0, 0, err
		}
	}
	if before, err = hits(ctx, pair.PrimaryURL(), wait, wrap); err != nil {
		return 0, 0, err
	}
	if err := pair.KillPrimary(); err != nil {
		return 0, 0, err
	}
	if err := pair.ResumeReplica(); err != nil {
		return 0, 0, err
	}
	if err := pair.PromoteReplica(ctx); err != nil {
		return 0, 0, err
	}
	after, err = hits(ctx, pair.ReplicaURL(), 0, wrap) // no replica left to wait for
	return before, after, err
}

// hits makes one client's hits on the Redis at url, fail-closed, waiting
// for wait replicas, until the limit or the store refuses one, FailoverLimit + 1 hits
// at most; it returns how many were allowed.
func hits(ctx context.Context, url string, wait int, wrap func(ratelab.Store) ratelab.Store) (int, error) {
	c, err := redisstore.NewClient(url, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	rs, err := redisstore.New(c, redisstore.Options{Timeout: time.Second, WaitReplicas: wait, WaitTimeout: 50 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}) // the table reports the refusals
	if err != nil {
		return 0, err
	}
	var s ratelab.Store = rs
	if wrap != nil {
		s = wrap(rs)
	}
	rule := ratelab.Rule{Name: "failover", Limit: FailoverLimit, Window: time.Hour}.Normalized()
	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	allowed := 0
	for range FailoverLimit + 1 {
		d, err := s.TakeAt(ctx, rule, "ip:203.0.113.7", now)
		switch {
		case errors.Is(err, redisstore.ErrNotReplicated):
			// Refused: 503, the count not confirmed or not taken. The
			// client stops at the first refusal, of either kind.
			return allowed, nil
		case err != nil:
			return allowed, err
		case !d.Allowed:
			return allowed, nil
		}
		allowed++
	}
	return allowed, nil
}
