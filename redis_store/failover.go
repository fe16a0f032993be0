package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/claim"
)

// Replicated is a primary and its replica that a demonstration can fail
// over: pause the replica's replication, kill the primary, promote the
// replica. internal/redistest.Pair is one, made of two private
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
// been silent too long (NOREPLICAS), with the same outcome. newPair starts
// a fresh pair for each run, configured for the mode.
func Failover(ctx context.Context, newPair func(FailoverMode) (Replicated, func(), error)) ([]claim.Claim, error) {
	var out []claim.Claim
	for _, mode := range []FailoverMode{Asynchronous, WaitForReplica, MinReplicasToWrite} {
		allowedBefore, allowedAfter, err := failoverRun(ctx, newPair, mode)
		if err != nil {
			return nil, err
		}
		observed := fmt.Sprintf("%d allowed before, %d after: %d in one window", allowedBefore, allowedAfter, allowedBefore+allowedAfter)
		held := fmt.Sprintf("0 allowed before, %d after: %d in one window", FailoverLimit, FailoverLimit)
		switch mode {
		case Asynchronous:
			out = append(out, claim.Claim{Case: "failover, replication asynchronous",
				Expected: fmt.Sprintf("%d allowed before, %d after: %d in one window", FailoverLimit, FailoverLimit, 2*FailoverLimit), Observed: observed})
		case WaitForReplica:
			out = append(out, claim.Claim{Case: "failover, WAIT for 1 replica (fail-closed)", Expected: held, Observed: observed})
		case MinReplicasToWrite:
			out = append(out, claim.Claim{Case: "failover, min-replicas-to-write 1 (fail-closed)", Expected: held, Observed: observed})
		}
	}
	return out, nil
}

// !-failover

// failoverRun makes the hits of one run: before the failover on the
// primary with the replica paused, after it on the promoted replica, each
// phase until the limit refuses a hit, limit + 1 hits at most.
func failoverRun(ctx context.Context, newPair func(FailoverMode) (Replicated, func(), error), mode FailoverMode) (before, after int, err error) {
	wait := 0
	if mode == WaitForReplica {
		wait = 1
	}
	pair, stop, err := newPair(mode)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
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
			case errors.Is(err, ErrNotReplicated), err != nil && strings.Contains(err.Error(), "NOREPLICAS"):
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
