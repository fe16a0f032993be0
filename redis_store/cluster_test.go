package redisstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// Every check every store passes, through a three-primary Redis Cluster
// and the client NewClient makes of its URL.
func TestStoreOnACluster(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		prefix := fmt.Sprintf("c%d:", n.Add(1))
		return func() ratelab.Store {
			c, err := redisstore.NewClient(cl.URL(), 0)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			s, err := redisstore.New(c, redisstore.Options{Prefix: prefix})
			require.NoError(t, err)
			return s
		}
	}, true)
}

// Keys spread over every node, hit from many clients at once while the hot
// key's slot moves from one node to another (MIGRATING/IMPORTING, MIGRATE,
// SETSLOT NODE): MOVED and ASK redirects are followed and no hit is lost.
func TestClusterCountsExactlyWhileASlotMoves(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	rule := storetest.Checked(ratelab.Rule{Name: "cluster", Limit: ratelab.MaxLimit, Window: time.Hour})
	now := time.Now()
	keys := []string{"ip:203.0.113.7", "ip:198.51.100.9", "ip:192.0.2.1", "ip:192.0.2.2", "ip:192.0.2.3", "ip:192.0.2.4"}
	newStore := func() *redisstore.Store {
		c, err := redisstore.NewClient(cl.URL(), 2*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Options{Timeout: 2 * time.Second})
		require.NoError(t, err)
		return s
	}
	admin := cl.Client()
	defer admin.Close()
	hot := newStore().Key(rule, keys[0])
	slot, err := admin.ClusterKeySlot(ctx, hot).Result()
	require.NoError(t, err)

	const clients, hits = 6, 300
	var wg sync.WaitGroup
	var done atomic.Int64
	for range clients {
		s := newStore()
		wg.Go(func() {
			for i := range hits {
				if _, err := s.TakeAt(ctx, rule, keys[i%len(keys)], now); err != nil {
					t.Errorf("hit %d: %v", i, err)
					return
				}
				done.Add(1)
			}
		})
	}
	require.Eventually(t, func() bool { return done.Load() > clients*hits/4 }, 20*time.Second, time.Millisecond)
	target, err := cl.MoveSlot(ctx, int(slot))
	require.NoError(t, err)
	moved := done.Load()
	wg.Wait()
	assert.Less(t, moved, int64(clients*hits), "traffic went on after the slot moved")
	direct := cl.Nodes[target].Client()
	defer direct.Close()
	n, err := direct.Exists(ctx, hot).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the hot key now lives on the node its slot moved to")

	check := newStore()
	for _, k := range keys {
		d, err := check.TakeAt(ctx, rule, k, now)
		require.NoError(t, err)
		assert.Equal(t, int64(clients*hits/len(keys)+1), rule.Limit-d.Remaining, "key %s: every hit counted, this one too", k)
	}
}

// keySlot is the Redis key of key under waitRule in s, and its slot: that
// of every key of its state.
func keySlot(t *testing.T, cl *redisserver.Cluster, s *redisstore.Store, key string) (string, int64) {
	t.Helper()
	admin := cl.Client()
	defer admin.Close()
	rkey := s.Key(waitRule, key)
	slot, err := admin.ClusterKeySlot(context.Background(), rkey).Result()
	require.NoError(t, err)
	other, err := admin.ClusterKeySlot(context.Background(), rkey+":reset_at").Result()
	require.NoError(t, err)
	require.Equal(t, slot, other, "the count and reset_at in one slot")
	return rkey, slot
}

// waitRule is the rule of the WAIT tests: 30 per hour, far from refusing.
var waitRule = storetest.Checked(ratelab.Rule{Name: "wait", Limit: 30, Window: time.Hour})

// clusterStore is a store with WaitReplicas 1 on cl, through NewClient.
// Every node has the store's scripts, so that no hit needs a NOSCRIPT
// attempt first (whose pipeline carries a WAIT too).
func clusterStore(t *testing.T, cl *redisserver.Cluster, policy ratelab.FailPolicy, waitTimeout time.Duration) guarded {
	t.Helper()
	for _, n := range cl.Nodes {
		c := n.Client()
		require.NoError(t, redisstore.LoadScripts(context.Background(), c))
		c.Close()
	}
	c, err := redisstore.NewClient(cl.URL(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Options{Timeout: 5 * time.Second,
		WaitReplicas: 1, WaitTimeout: waitTimeout, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return guarded{s, storetest.WithPolicy(s, policy, slog.New(slog.DiscardHandler))}
}

// guarded is a store behind a fail policy, with the store's other methods.
type guarded struct {
	*redisstore.Store
	safe ratelab.Store
}

func (g guarded) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return g.safe.TakeAt(ctx, r, key, now)
}

// waitCalls is how many WAITs each node of cl has run (INFO commandstats).
func waitCalls(t *testing.T, cl *redisserver.Cluster) []int {
	t.Helper()
	calls := regexp.MustCompile(`(?m)^cmdstat_wait:calls=(\d+),`)
	out := make([]int, len(cl.Nodes))
	for i, s := range cl.Nodes {
		c := s.Client()
		info, err := c.Info(context.Background(), "commandstats").Result()
		c.Close()
		require.NoError(t, err)
		if m := calls.FindStringSubmatch(info); m != nil {
			out[i], _ = strconv.Atoi(m[1])
		}
	}
	return out
}

// since is calls minus before, node by node.
func since(calls, before []int) []int {
	out := make([]int, len(calls))
	for i := range calls {
		out[i] = calls[i] - before[i]
	}
	return out
}

// attachReplica starts a cluster node and makes it a replica of cl's node
// primary, and waits until the primary counts it online.
func attachReplica(t *testing.T, cl *redisserver.Cluster, primary int) {
	t.Helper()
	ctx := context.Background()
	srv, err := redisserver.Start("--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	p, r := cl.Nodes[primary].Client(), srv.Client()
	defer p.Close()
	defer r.Close()
	require.NoError(t, p.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(), "a full sync at once")
	id, err := p.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	host, port, _ := strings.Cut(cl.Nodes[primary].Addr, ":")
	require.NoError(t, r.ClusterMeet(ctx, host, port).Err())
	// The new node learns the primary's id by gossip: until then REPLICATE
	// answers "Unknown node".
	require.NoError(t, poll.Until(20*time.Second, 20*time.Millisecond, func() error {
		return r.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
	}))
	require.NoError(t, poll.Until(20*time.Second, 20*time.Millisecond, func() error {
		info, err := p.Info(ctx, "replication").Result()
		if err == nil && !strings.Contains(info, "state=online") {
			err = fmt.Errorf("no replica online at %s", cl.Nodes[primary].Addr)
		}
		return err
	}))
}

// The finding: the keyless WAIT went through the cluster client's pipeline
// to primaries in turn, and a primary with a replica confirmed hits that
// the key's primary, which has none, had not replicated. WAIT now runs on
// the connection of the node that ran the script: with the key's primary
// alone, every hit is refused (fail-closed), every WAIT on that node; and
// each refused hit was counted there, as the error says.
func TestWaitOnAClusterIsAnsweredByTheKeysNode(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	s := clusterStore(t, cl, ratelab.FailClosed, 100*time.Millisecond)
	admin := cl.Client()
	defer admin.Close()
	slot, err := admin.ClusterKeySlot(ctx, s.Key(waitRule, "ip:203.0.113.7")).Result()
	require.NoError(t, err)
	owner := int(slot) * len(cl.Nodes) / 16384 // StartCluster splits the slots evenly, in order
	attachReplica(t, cl, (owner+1)%len(cl.Nodes))

	const hits = 9
	before := waitCalls(t, cl)
	for i := range hits {
		d, err := s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
		assert.ErrorIs(t, err, redisstore.ErrNotReplicated, "hit %d: got %+v", i+1, d)
		assert.ErrorIs(t, err, ratelab.ErrUnavailable, "hit %d: fail-closed answers 503", i+1)
		if err != nil {
			assert.Contains(t, err.Error(), "counted on the primary", "hit %d", i+1)
		}
	}
	want := make([]int, len(cl.Nodes))
	want[owner] = hits
	assert.Equal(t, want, since(waitCalls(t, cl), before), "WAITs per node: every one on the key's node, %d", owner)

	// With a replica of its own, the key's primary confirms: the hit is
	// allowed, after the refused ones, which were counted.
	attachReplica(t, cl, owner)
	confirmed := clusterStore(t, cl, ratelab.FailClosed, 3*time.Second)
	d, err := confirmed.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	assert.Equal(t, waitRule.Limit-hits-1, d.Remaining, "the %d refused hits stayed counted", hits)
}

// A hit whose slot moved since the client last read the cluster's map is
// answered MOVED without running the script: it runs once more on the new
// owner, and WAITs there. (The pipeline the old owner answered MOVED
// carried a WAIT too, on the old owner: its answer is not read.)
func TestWaitFollowsAMovedSlot(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	s := clusterStore(t, cl, ratelab.FailOpen, 20*time.Millisecond) // no replica: decided on the primary's count
	admin := cl.Client()
	defer admin.Close()
	slot, err := admin.ClusterKeySlot(ctx, s.Key(waitRule, "ip:203.0.113.7")).Result()
	require.NoError(t, err)
	d, err := s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	require.Equal(t, waitRule.Limit-1, d.Remaining)

	target, err := cl.MoveSlot(ctx, int(slot))
	require.NoError(t, err)
	before := waitCalls(t, cl)
	d, err = s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	assert.Equal(t, ratelab.Shared, d.Source)
	assert.Equal(t, waitRule.Limit-2, d.Remaining, "counted once, on the new owner")
	want := make([]int, len(cl.Nodes))
	want[target], want[(target+len(cl.Nodes)-1)%len(cl.Nodes)] = 1, 1
	assert.Equal(t, want, since(waitCalls(t, cl), before), "WAITs per node: the one with the script on the new owner, %d", target)
}

// A hit on a state its slot's owner no longer holds while the slot moves
// is answered ASK: the script runs on the importing node after ASKING,
// and WAITs there. (The pipeline the owner answered ASK carried a WAIT
// too.)
func TestWaitFollowsAnAskRedirect(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	s := clusterStore(t, cl, ratelab.FailOpen, 20*time.Millisecond)
	rkey, slot := keySlot(t, cl, s.Store, "ip:203.0.113.7")
	_, err := s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	m, err := cl.BeginMove(ctx, int(slot))
	require.NoError(t, err)
	require.NoError(t, m.Migrate(ctx, rkey, rkey+":reset_at"), "both keys of the window, at once")
	owner, target := m.Owner, m.Target

	before := waitCalls(t, cl)
	for i := range 2 {
		d, err := s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
		require.NoError(t, err)
		assert.Equal(t, ratelab.Shared, d.Source)
		assert.Equal(t, waitRule.Limit-int64(i+2), d.Remaining, "hit %d", i+2)
	}
	want := make([]int, len(cl.Nodes))
	want[target], want[owner] = 2, 2
	assert.Equal(t, want, since(waitCalls(t, cl), before), "WAITs per node: those with the script on the importing node, %d", target)
	dst := cl.Nodes[target].Client()
	defer dst.Close()
	var exists *redis.IntCmd
	_, err = dst.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING")
		exists = p.Exists(ctx, rkey, rkey+":reset_at")
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(2), exists.Val(), "the state is on the importing node")
}

// A fixed window is two keys in one slot (a hash tag). While its slot
// moves, a node holding only a part of them, or the importing node for a
// window not yet begun, answers TRYAGAIN: the script did not run, and the
// hit is tried again until the slot has moved, then counted once.
func TestFixedWindowWaitsForItsMovingSlot(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	s := clusterStore(t, cl, ratelab.FailOpen, 20*time.Millisecond)
	rkey, slot := keySlot(t, cl, s.Store, "ip:192.0.2.9")
	m, err := cl.BeginMove(ctx, int(slot))
	require.NoError(t, err)

	type result struct {
		d   ratelab.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := s.TakeAt(ctx, waitRule, "ip:192.0.2.9", t0) // a new window: on neither node
		done <- result{d, err}
	}()
	dst := cl.Nodes[m.Target].Client()
	defer dst.Close()
	require.Eventually(t, func() bool {
		return strings.Contains(dst.Info(ctx, "errorstats").Val(), "errorstat_TRYAGAIN")
	}, 10*time.Second, time.Millisecond, "the importing node answered TRYAGAIN")
	require.NoError(t, m.Finish(ctx))
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, waitRule.Limit-1, r.d.Remaining, "counted once")
	n, err := dst.Exists(ctx, rkey, rkey+":reset_at").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "both keys on the new owner")
}
