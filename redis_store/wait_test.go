package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/lab/redisserver"
	"github.com/ratelab/ratelab/internal/poll"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// waitRule is the rule of the WAIT tests: 30 per hour, far from refusing.
var waitRule = ratelab.Rule{Name: "wait", Limit: 30, Window: time.Hour}

// clusterStore is a store with WaitReplicas 1 on cl, through NewClient.
// Every node has the store's scripts, so that no hit needs a NOSCRIPT
// attempt first (whose pipeline carries a WAIT too).
func clusterStore(t *testing.T, cl *redisserver.Cluster, policy ratelab.FailPolicy, waitTimeout time.Duration) *redisstore.Store {
	t.Helper()
	for _, n := range cl.Nodes {
		c := n.Client()
		require.NoError(t, redisstore.LoadScripts(context.Background(), c))
		c.Close()
	}
	c, err := redisstore.NewClient(cl.URL(), 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, redisstore.Options{FailPolicy: policy, Timeout: 5 * time.Second,
		WaitReplicas: 1, WaitTimeout: waitTimeout, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return s
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

	target, err := migrateSlot(ctx, cl, int(slot))
	require.NoError(t, err)
	before := waitCalls(t, cl)
	d, err = s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	assert.NoError(t, d.NotCounted)
	assert.Equal(t, waitRule.Limit-2, d.Remaining, "counted once, on the new owner")
	want := make([]int, len(cl.Nodes))
	want[target], want[(target+len(cl.Nodes)-1)%len(cl.Nodes)] = 1, 1
	assert.Equal(t, want, since(waitCalls(t, cl), before), "WAITs per node: the one with the script on the new owner, %d", target)
}

// A hit on a key its slot's owner no longer holds while the slot moves is
// answered ASK: the script runs on the importing node after ASKING, and
// WAITs there. (The pipeline the owner answered ASK carried a WAIT too.)
func TestWaitFollowsAnAskRedirect(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	s := clusterStore(t, cl, ratelab.FailOpen, 20*time.Millisecond)
	rkey := s.Key(waitRule, "ip:203.0.113.7")
	admin := cl.Client()
	defer admin.Close()
	slot, err := admin.ClusterKeySlot(ctx, rkey).Result()
	require.NoError(t, err)
	_, owner, target, err := beginMigration(ctx, cl, int(slot))
	require.NoError(t, err)

	before := waitCalls(t, cl)
	for i := range 2 {
		d, err := s.TakeAt(ctx, waitRule, "ip:203.0.113.7", t0)
		require.NoError(t, err)
		assert.NoError(t, d.NotCounted)
		assert.Equal(t, waitRule.Limit-int64(i+1), d.Remaining, "hit %d", i+1)
	}
	want := make([]int, len(cl.Nodes))
	want[target], want[owner] = 2, 2
	assert.Equal(t, want, since(waitCalls(t, cl), before), "WAITs per node: those with the script on the importing node, %d", target)
	dst := cl.Nodes[target].Client()
	defer dst.Close()
	var exists *redis.IntCmd
	_, err = dst.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING")
		exists = p.Exists(ctx, rkey)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(1), exists.Val(), "the state is on the importing node")
}

// The finding: a hit WAIT did not confirm was reported "not counted"
// (fail-open) although the script had counted it. Fail-closed refuses it
// saying it was counted; fail-open and fail-local decide it on the
// primary's count, which holds it: the third hit at a limit of 2 is
// refused.
func TestUnconfirmedHitSaysItWasCounted(t *testing.T) {
	srv := redisserver.ForTest(t) // no replica: WAIT 1 confirms nothing
	rule := ratelab.Rule{Name: "unconfirmed", Limit: 2, Window: time.Hour}
	for i, policy := range []ratelab.FailPolicy{ratelab.FailClosed, ratelab.FailOpen, ratelab.FailLocal} {
		s := newStore(t, srv, redisstore.Options{FailPolicy: policy, WaitReplicas: 1, WaitTimeout: 10 * time.Millisecond,
			Prefix: fmt.Sprintf("u%d:", i), Logger: slog.New(slog.DiscardHandler)})
		for hit := 1; hit <= 3; hit++ {
			d, err := s.TakeAt(context.Background(), rule, "ip:203.0.113.7", t0)
			if policy == ratelab.FailClosed {
				require.ErrorIs(t, err, redisstore.ErrNotReplicated, "fail-%v, hit %d", policy, hit)
				assert.Contains(t, err.Error(), "counted on the primary, not confirmed on 1 of 1 replicas", "fail-%v", policy)
				continue
			}
			require.NoError(t, err, "fail-%v, hit %d", policy, hit)
			assert.NoError(t, d.NotCounted, "fail-%v, hit %d: the primary counted it", policy, hit)
			assert.False(t, d.Local, "fail-%v, hit %d", policy, hit)
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
	srv, err := redisserver.Start("--min-replicas-to-write", "1")
	if errors.Is(err, redisserver.ErrNoServer) {
		t.Skip("redis-server not found: install it with " + redisserver.InstallHint)
	}
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	s := newStore(t, srv, redisstore.Options{FailPolicy: ratelab.FailOpen, Logger: slog.New(slog.DiscardHandler)})
	d, err := s.TakeAt(context.Background(), waitRule, "ip:203.0.113.7", t0)
	require.NoError(t, err)
	require.ErrorIs(t, d.NotCounted, redisstore.ErrNotReplicated)
	assert.Contains(t, d.NotCounted.Error(), "not counted")
}
