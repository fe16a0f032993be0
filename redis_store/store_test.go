package redisstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

var t0 = storetest.T0

func newStore(t *testing.T, srv *redisserver.Server, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	c := srv.Client()
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, opts)
	require.NoError(t, err)
	return s
}

func TestStore(t *testing.T) {
	srv := redisserver.ForTest(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		prefix := fmt.Sprintf("t%d:", n.Add(1)) // a fresh place for states
		return func() ratelab.Store { return newStore(t, srv, redisstore.Options{Prefix: prefix}) }
	}, true)
}

func TestStateSurvivesAcrossInstances(t *testing.T) {
	srv := redisserver.ForTest(t)
	got := storetest.CrossInstance(t, func(t *testing.T) ratelab.Store { return newStore(t, srv, redisstore.Options{}) })
	assert.Equal(t, int64(28), got)
}

// Keys reach Redis hashed, with an expiry; the count is exact under
// concurrency from many clients.
func TestKeysAreHashedExpireAndCountExactly(t *testing.T) {
	srv := redisserver.ForTest(t)
	var wg sync.WaitGroup
	for range 8 {
		s := newStore(t, srv, redisstore.Options{})
		wg.Go(func() {
			for range 100 {
				if _, err := s.Take(context.Background(), storetest.Original, storetest.Key); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	c := srv.Client()
	defer c.Close()
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	slices.Sort(keys)
	require.Len(t, keys, 2, "a fixed window's count and reset_at")
	assert.Equal(t, keys[0]+":reset_at", keys[1], "reset_at is named after the count")
	for _, k := range keys {
		assert.NotContains(t, k, "203.0.113.7", "the key must be hashed")
		assert.True(t, strings.HasPrefix(k, "ratelab:fixed:{"), k)
		ttl, err := c.TTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Greater(t, ttl, 59*time.Minute, "%s: the expiry is set with the count", k)
	}
	count, err := c.Get(ctx, keys[0]).Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(800), count)
}

// A window ending further ahead than the rule's window and MaxSkew is
// another rule's: a conflict, the state untouched.
func TestFixedWindowTooFarAheadIsAConflict(t *testing.T) {
	srv := redisserver.ForTest(t)
	s := newStore(t, srv, redisstore.Options{})
	c := srv.Client()
	defer c.Close()
	key := s.Key(storetest.Original, storetest.Key)
	require.NoError(t, c.MSet(context.Background(), key, 7, key+":reset_at", t0.Unix()+99999).Err())
	_, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, t0)
	require.ErrorIs(t, err, ratelab.ErrRuleConflict)
	assert.Contains(t, err.Error(), "27h46m39s after this hit")
	got, err := c.MGet(context.Background(), key, key+":reset_at").Result()
	require.NoError(t, err)
	assert.Equal(t, []any{"7", fmt.Sprint(t0.Unix() + 99999)}, got, "the other rule's state was touched")
}

// A fixed window's state outlives the latest hit that can still count in
// it — one stamped MaxSkew late, at its last second — and not much more:
// its expiry is the window, MaxSkew and one second, from the hit's clock.
func TestFixedWindowExpiresAfterItsSkew(t *testing.T) {
	srv := redisserver.ForTest(t)
	s := newStore(t, srv, redisstore.Options{})
	c := srv.Client()
	defer c.Close()
	r := storetest.Checked(ratelab.Rule{Name: "ttl", Limit: 5, Window: time.Minute})
	storetest.Take(t, s, r, storetest.Key, time.Now())
	want := r.Window + ratelab.MaxSkew + time.Second
	for _, k := range []string{s.Key(r, storetest.Key), s.Key(r, storetest.Key) + ":reset_at"} {
		got, err := c.PTTL(context.Background(), k).Result()
		require.NoError(t, err)
		assert.True(t, got > want-2*time.Second && got <= want, "%s: PTTL %v, want about %v", k, got, want)
	}
}

// A fixed window that does not count refused hits stops its count at the
// limit: the refused hits leave the state as it was. One that counts them
// counts every hit. The decisions are the same either way.
func TestFixedWindowRefusalsCountedOrNot(t *testing.T) {
	srv := redisserver.ForTest(t)
	s := newStore(t, srv, redisstore.Options{})
	c := srv.Client()
	defer c.Close()
	for _, tt := range []struct {
		refusals ratelab.Refusals
		want     int64
	}{
		{ratelab.CountRefusals, 6},
		{ratelab.IgnoreRefusals, 3},
	} {
		r := storetest.Checked(ratelab.Rule{Name: fmt.Sprint("refusals-", tt.refusals), Limit: 3, Window: time.Minute, Refusals: tt.refusals})
		for i := range 6 {
			d := storetest.Take(t, s, r, storetest.Key, t0)
			assert.Equal(t, i < 3, d.Allowed, "%s: hit %d", tt.refusals, i+1)
		}
		got, err := c.Get(context.Background(), s.Key(r, storetest.Key)).Int64()
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, "%s: the stored count", tt.refusals)
	}
}

// Every algorithm's key carries its name, and every state an expiry.
func TestEveryAlgorithmHasAKeyWithAnExpiry(t *testing.T) {
	srv := redisserver.ForTest(t)
	s := newStore(t, srv, redisstore.Options{})
	c := srv.Client()
	defer c.Close()
	for _, r := range storetest.Rules() {
		storetest.Take(t, s, r, storetest.Key, time.Now())
		key := s.Key(r, storetest.Key)
		assert.True(t, strings.HasPrefix(key, "ratelab:"+string(r.Algorithm)+":"), key)
		ttl, err := c.PTTL(context.Background(), key).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "%s: the expiry is set with the state", r.Algorithm)
		assert.LessOrEqual(t, ttl, 2*time.Minute+ratelab.MaxSkew+2*time.Second, r.Algorithm)
	}
}

// The caller's context ends the round trip: a Redis that never answers,
// a context cancelled meanwhile, and the hit returns the context's error
// under either policy, not the fail policy's answer.
func TestContextEndsTheRoundTrip(t *testing.T) {
	addr := storetest.SilentServer(t)
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		c, err := redisstore.NewClient("redis://"+addr+"/0", time.Minute)
		require.NoError(t, err)
		defer c.Close()
		raw, err := redisstore.New(c, redisstore.Options{Timeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		s := storetest.WithPolicy(raw, policy, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		_, err = s.TakeAt(ctx, storetest.Original, storetest.Key, t0)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "policy %v", policy)
		assert.NotErrorIs(t, err, ratelab.ErrUnavailable, "policy %v", policy)
		assert.Less(t, time.Since(start), 10*time.Second, "policy %v: ended by the caller's deadline", policy)
	}
}

// A Redis that refuses connections, and one that accepts and never
// answers: every policy, within the timeout.
func TestRedisDownFollowsPolicy(t *testing.T) {
	refused := func() string { // a port nobody listens on
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		ln.Close()
		return addr
	}
	silent := func() string { return storetest.SilentServer(t) }
	for name, addr := range map[string]func() string{"refused": refused, "silent": silent} {
		for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
			t.Run(name+"/fail-"+policy.String(), func(t *testing.T) {
				c, err := redisstore.NewClient("redis://"+addr()+"/0", 100*time.Millisecond)
				require.NoError(t, err)
				defer c.Close()
				var logs bytes.Buffer
				raw, err := redisstore.New(c, redisstore.Options{Timeout: 100 * time.Millisecond,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				require.NoError(t, err)
				s := storetest.WithPolicy(raw, policy, slog.New(slog.NewTextHandler(&logs, nil)))
				start := time.Now()
				h, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, t0)
				assert.Less(t, time.Since(start), 2*time.Second, "bounded by the timeout")
				switch policy {
				case ratelab.FailOpen:
					require.NoError(t, err)
					assert.NotEqual(t, ratelab.Shared, h.Source)
					assert.True(t, h.Allowed)
					assert.Contains(t, logs.String(), "hit not counted (fail-open)")
				case ratelab.FailLocal:
					require.NoError(t, err)
					assert.True(t, (h.Source == ratelab.Local) && h.Allowed, "decided in this process: %+v", h)
					assert.Contains(t, logs.String(), "decided by this process alone (fail-local)")
				default:
					assert.ErrorIs(t, err, ratelab.ErrUnavailable)
					assert.Contains(t, logs.String(), "hit refused (fail-closed)")
				}
			})
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	_, err := redisstore.New(nil, redisstore.Options{})
	assert.ErrorContains(t, err, "needs a client")
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	_, err = redisstore.New(c, redisstore.Options{Timeout: -1})
	assert.ErrorContains(t, err, "must not be negative")
}

// The finding: a hit WAIT did not confirm was reported "not counted"
// (fail-open) although the script had counted it. Fail-closed refuses it
// saying it was counted; fail-open and fail-local decide it on the
// primary's count, which holds it: the third hit at a limit of 2 is
// refused.
func TestUnconfirmedHitSaysItWasCounted(t *testing.T) {
	srv := redisserver.ForTest(t) // no replica: WAIT 1 confirms nothing
	rule := storetest.Checked(ratelab.Rule{Name: "unconfirmed", Limit: 2, Window: time.Hour})
	for i, policy := range []ratelab.FailPolicy{ratelab.FailClosed, ratelab.FailOpen, ratelab.FailLocal} {
		s := storetest.WithPolicy(newStore(t, srv, redisstore.Options{WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond,
			Prefix: fmt.Sprintf("u%d:", i), Logger: slog.New(slog.DiscardHandler)}), policy, slog.New(slog.DiscardHandler))
		for hit := 1; hit <= 3; hit++ {
			d, err := s.TakeAt(context.Background(), rule, "ip:203.0.113.7", t0)
			if policy == ratelab.FailClosed {
				require.ErrorIs(t, err, redisstore.ErrNotReplicated, "fail-%v, hit %d", policy, hit)
				assert.Contains(t, err.Error(), "counted on the primary, not confirmed on 1 of 1 replicas", "fail-%v", policy)
				continue
			}
			require.NoError(t, err, "fail-%v, hit %d", policy, hit)
			assert.Equal(t, ratelab.Shared, d.Source, "fail-%v, hit %d: the primary counted it", policy, hit)
			assert.False(t, (d.Source == ratelab.Local), "fail-%v, hit %d", policy, hit)
			assert.Equal(t, hit <= 2, d.Allowed, "fail-%v, hit %d: decided on the primary's count", policy, hit)
		}
		// The count the primary holds: the three hits, refused or not.
		plain := newStore(t, srv, redisstore.Options{Prefix: fmt.Sprintf("u%d:", i)})
		d, err := plain.TakeAt(context.Background(), rule, "ip:203.0.113.7", t0)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "fail-%v: the fourth hit is over the limit too", policy)
	}
}

// A primary that refuses the write for want of good replicas
// (min-replicas-to-write) did not count the hit: fail-open says so.
func TestNoReplicasIsNotCounted(t *testing.T) {
	srv := redisserver.ForTest(t, "--min-replicas-to-write", "1")
	s := storetest.WithPolicy(newStore(t, srv, redisstore.Options{Logger: slog.New(slog.DiscardHandler)}), ratelab.FailOpen, slog.New(slog.DiscardHandler))
	d, err := s.TakeAt(context.Background(), waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	require.ErrorIs(t, d.Cause, redisstore.ErrNotReplicated)
	assert.Contains(t, d.Cause.Error(), "not counted")
}
