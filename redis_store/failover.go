package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/barchart"
	"github.com/ratelab/ratelab/internal/claim"
)

// Replicated is a primary and its replica that a demonstration can fail
// over: pause the replica's replication, kill the primary, promote the
// replica. internal/lab/redisserver.Pair is one, made of two private
// redis-servers.
type Replicated interface {
	PrimaryURL() string
	ReplicaURL() string
	PauseReplica() error
	ResumeReplica() error
	KillPrimary() error
	PromoteReplica(ctx context.Context) error
	// WaitReplicaLagging returns once the primary counts no replica as
	// good for min-replicas-to-write.
	WaitReplicaLagging(limit time.Duration) error
	Stop()
}

// FailoverMode is one way of running the failover demonstration.
type FailoverMode int

// The three ways: replication as it is, WAIT after every script, and the
// primary configured with min-replicas-to-write 1 (min-replicas-max-lag 1).
const (
	Asynchronous FailoverMode = iota
	WaitForReplica
	MinReplicasToWrite
)

// String names the mode as the demonstration's table does.
func (m FailoverMode) String() string {
	switch m {
	case Asynchronous:
		return "replication asynchronous"
	case WaitForReplica:
		return "WAIT for 1 replica (fail-closed)"
	case MinReplicasToWrite:
		return "min-replicas-to-write 1 (fail-closed)"
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

// FailoverChart is the runs as the chapter's figure.
func FailoverChart(runs []FailoverRun) barchart.Chart {
	c := barchart.Chart{
		Title:    fmt.Sprintf("Hits allowed in one window across a failover, limit %d per hour", FailoverLimit),
		Segments: []string{"allowed by the old primary, lost with it", "allowed by the promoted replica"},
		Limit:    FailoverLimit,
		Unit:     "hits allowed to one client in one window",
	}
	for _, r := range runs {
		c.Bars = append(c.Bars, barchart.Bar{Label: r.Mode.String(), Values: []int{r.Before, r.After}})
	}
	return c
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
// been silent too long (NOREPLICAS), with the same outcome. start starts
// a fresh pair for each run, passing the primary its arguments.
func Failover(ctx context.Context, start func(primaryArgs ...string) (Replicated, error)) ([]FailoverRun, error) {
	var out []FailoverRun
	for _, mode := range []FailoverMode{Asynchronous, WaitForReplica, MinReplicasToWrite} {
		before, after, err := failoverRun(ctx, start, mode)
		if err != nil {
			return nil, err
		}
		out = append(out, FailoverRun{Mode: mode, Before: before, After: after})
	}
	return out, nil
}

// Claim is the run as a row of the demonstration's table: replication as
// it is lets the limit through twice, either mitigation lets it through
// once.
func (r FailoverRun) Claim() claim.Claim {
	want := FailoverRun{Mode: r.Mode, After: FailoverLimit}
	if r.Mode == Asynchronous {
		want.Before = FailoverLimit
	}
	return claim.Claim{Case: "failover, " + r.Mode.String(), Expected: want.String(), Observed: r.String()}
}

// !-failover

// failoverRun makes the hits of one run: before the failover on the
// primary with the replica paused, after it on the promoted replica, each
// phase until the limit refuses a hit, limit + 1 hits at most.
func failoverRun(ctx context.Context, start func(primaryArgs ...string) (Replicated, error), mode FailoverMode) (before, after int, err error) {
	wait := 0
	if mode == WaitForReplica {
		wait = 1
	}
	var args []string
	if mode == MinReplicasToWrite {
		args = []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "1"}
	}
	pair, err := start(args...)
	if err != nil {
		return 0, 0, err
	}
	defer pair.Stop()
	rule := ratelab.Rule{Name: "failover", Limit: FailoverLimit, Window: time.Hour}
	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	hits := func(url string, wait int) (int, error) {
		c, err := NewClient(url, time.Second)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		s, err := New(c, Options{FailPolicy: ratelab.FailClosed, Timeout: time.Second, WaitReplicas: wait, WaitTimeout: 50 * time.Millisecond,
			Logger: slog.New(slog.DiscardHandler)}) // the table reports the refusals
		if err != nil {
			return 0, err
		}
		allowed := 0
		for range FailoverLimit + 1 {
			d, err := s.TakeAt(ctx, rule, "ip:203.0.113.7", now)
			switch {
			case errors.Is(err, ErrNotReplicated):
				continue // refused: 503, the count not confirmed or not taken
			case err != nil:
				return allowed, err
			case !d.Allowed:
				return allowed, nil
			}
			allowed++
		}
		return allowed, nil
	}
	if err := pair.PauseReplica(); err != nil {
		return 0, 0, err
	}
	if mode == MinReplicasToWrite {
		if err := pair.WaitReplicaLagging(10 * time.Second); err != nil {
			return 0, 0, err
		}
	}
	if before, err = hits(pair.PrimaryURL(), wait); err != nil {
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
	if after, err = hits(pair.ReplicaURL(), 0); err != nil { // no replica left to wait for
		return 0, 0, err
	}
	return before, after, nil
}
