package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
)

// runWait runs sc on keys (of one slot) and WAIT after it, in one pipeline on the
// connection of the node that ran the script: WAIT counts the replicas
// that have the writes of its own connection, so on any other connection
// — another primary of a cluster — it confirms nothing about this hit.
// A cluster's key goes to its slot's primary; a MOVED reply (the slot
// moved: the script did not run) runs it once more on the new owner, an
// ASK reply (the slot is moving) on the importing node after ASKING. A
// script the node does not have is loaded there first. A node that does
// not answer makes the cluster client read the cluster's map again.
//
// A hit the script counted and fewer than WaitReplicas replicas confirmed
// returns the script's reply and an *unconfirmed error.
func (s *Store) runWait(ctx context.Context, sc *script, keys []string, args ...any) ([]int64, error) {
	node, asking := s.rdb, false
	cluster, _ := s.rdb.(*redis.ClusterClient)
	if cluster != nil {
		c, err := cluster.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = c
	}
	loaded, redirected := false, false
	for {
		res, acks, err := s.evalWait(ctx, node, asking, sc, keys, args)
		if err == nil || res.Err() == nil {
			return s.confirmed(res, acks)
		}
		switch {
		case redis.HasErrorPrefix(res.Err(), "NOSCRIPT") && !loaded:
			loaded = true
			if err := sc.Load(ctx, node).Err(); err != nil {
				return nil, err
			}
			continue
		case cluster != nil && !redirected:
			addr, moved := redis.IsMovedError(res.Err())
			var ask bool
			if !moved {
				addr, ask = redis.IsAskError(res.Err())
			}
			if moved || ask {
				redirected, asking = true, ask
				if node, err = nodeAt(ctx, cluster, addr); err != nil {
					return nil, err
				}
				continue
			}
		}
		var rerr redis.Error
		if cluster != nil && !errors.As(err, &rerr) {
			cluster.ReloadState(ctx) // the node may have been replaced: reread the map, in the background
		}
		return nil, err
	}
}

// evalWait sends EVALSHA and WAIT in one pipeline to node, after ASKING
// if asking.
func (s *Store) evalWait(ctx context.Context, node redis.Cmdable, asking bool, sc *script, keys []string, args []any) (*redis.Cmd, *redis.Cmd, error) {
	pipe := node.Pipeline()
	if asking {
		pipe.Do(ctx, "ASKING")
	}
	// Copies, so that the hit's own keys and arguments stay off the heap
	// on the path without WAIT.
	res := sc.EvalSha(ctx, pipe, slices.Clone(keys), slices.Clone(args)...)
	acks := pipe.Do(ctx, "WAIT", s.waitReplicas, s.waitTimeout.Milliseconds())
	_, err := pipe.Exec(ctx)
	return res, acks, err
}

// confirmed is the script's reply res if WAIT's reply acks counts enough
// replicas, and the reply with an *unconfirmed error if not: the script
// ran, so the hit is counted on the primary either way.
func (s *Store) confirmed(res, acks *redis.Cmd) ([]int64, error) {
	vals, err := res.Int64Slice()
	if err != nil {
		return nil, err
	}
	n, err := acks.Int64()
	if err != nil || n < int64(s.waitReplicas) {
		return vals, &unconfirmed{acks: n, want: int64(s.waitReplicas), timeout: s.waitTimeout, err: err}
	}
	return vals, nil
}

// nodeAt is the client of the cluster's node at addr, where a MOVED or
// ASK reply sent a hit; the cluster's map is read afresh first, so that
// the next hits go there too.
func nodeAt(ctx context.Context, cluster *redis.ClusterClient, addr string) (*redis.Client, error) {
	var found atomic.Pointer[redis.Client]
	err := cluster.ForEachShard(ctx, func(_ context.Context, c *redis.Client) error {
		if c.Options().Addr == addr {
			found.Store(c)
		}
		return nil
	})
	if c := found.Load(); c != nil || err != nil {
		return c, err
	}
	return nil, fmt.Errorf("redisstore: redirected to %s, a node the cluster does not list", addr)
}

// unconfirmed is a hit the script counted on the primary that fewer than
// want replicas confirmed (WAIT) within timeout: it wraps
// ErrNotReplicated.
type unconfirmed struct {
	acks, want int64
	timeout    time.Duration
	err        error // WAIT's own error, if it failed
	d          ratelab.Decision
}

// Decided returns the primary's decision, for ratelab.WithFailPolicy.
func (e *unconfirmed) Decided() ratelab.Decision { return e.d }

func (e *unconfirmed) Error() string {
	if e.err != nil {
		return fmt.Sprintf("%v: counted on the primary, not confirmed: WAIT: %v", ErrNotReplicated, e.err)
	}
	return fmt.Sprintf("%v: counted on the primary, not confirmed on %d of %d replicas within %v",
		ErrNotReplicated, e.want-e.acks, e.want, e.timeout)
}

func (e *unconfirmed) Unwrap() []error {
	if e.err == nil {
		return []error{ErrNotReplicated}
	}
	return []error{ErrNotReplicated, e.err}
}

// isUnconfirmed reports whether err is a hit counted on the primary and
// not confirmed by enough replicas.
func isUnconfirmed(err error) bool {
	var u *unconfirmed
	return errors.As(err, &u)
}

// unconfirmedHit is the error of d, a hit the primary counted and the
// replicas did not confirm (err, an *unconfirmed): it wraps
// ratelab.ErrUnavailable and ErrNotReplicated, and carries d, which
// ratelab.WithFailPolicy returns under fail-open and fail-local — the
// hit was counted, so it is not a store that could not count — and
// refuses under fail-closed, the count staying on the primary.
func unconfirmedHit(rkey string, d ratelab.Decision, err error) error {
	var u *unconfirmed
	errors.As(err, &u)
	u.d = d
	return fmt.Errorf("redisstore: %s: %w: %w", rkey, ratelab.ErrUnavailable, err)
}
