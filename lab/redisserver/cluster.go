package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/shortmode"
	"github.com/redis/go-redis/v9"
)

// Cluster is a running private Redis Cluster: primaries, each a Server,
// the 16384 hash slots split evenly among them in order, and as many
// replicas of each as asked.
type Cluster struct {
	Nodes    []*Server // the primaries, Nodes[i] holding the i-th share of the slots
	Replicas []*Server // Replicas[i] follows Nodes[i%len(Nodes)]
}

// StartCluster starts n redis-servers in cluster mode, gives each an even
// share of the slots, and adds replicas replicas to each; it introduces
// them to each other and waits until every node says the cluster is ok
// and every replica is in sync. A cluster with replicas judges a node
// failed after one second of silence (cluster-node-timeout 1000), so
// that a replica takes over within seconds of its primary's death; one
// without replicas waits five, so that load is not taken for a failure.
func StartCluster(n, replicas int) (*Cluster, error) {
	timeout := "5000"
	if replicas > 0 {
		timeout = "1000"
	}
	c := &Cluster{}
	for i := range n * (1 + replicas) {
		s, err := Start("--cluster-enabled", "yes", "--cluster-node-timeout", timeout, "--repl-diskless-sync-delay", "0")
		if err != nil {
			c.Stop()
			return nil, err
		}
		if i < n {
			c.Nodes = append(c.Nodes, s)
		} else {
			c.Replicas = append(c.Replicas, s)
		}
	}
	err := c.meet(context.Background())
	if err == nil {
		err = c.waitOK(20 * time.Second)
	}
	if err == nil {
		err = c.replicate(context.Background())
	}
	if err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// meet gives each node a config epoch of its own, as redis-cli does, and
// each primary its share of the slots, and introduces every node to the
// first. (Left at 0, the epochs collide and are settled by gossip for
// seconds after the cluster is ok; a slot moved meanwhile can go back to
// its old owner on some nodes and bounce hits between them for good.)
func (c *Cluster) meet(ctx context.Context) error {
	host, port, _ := strings.Cut(c.Nodes[0].Addr, ":")
	for i, s := range c.all() {
		cl := s.Client()
		err := cl.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err()
		if err == nil && i < len(c.Nodes) {
			err = cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*16384/len(c.Nodes), (i+1)*16384/len(c.Nodes)-1).Err()
		}
		if err == nil && i > 0 {
			err = cl.ClusterMeet(ctx, host, port).Err()
		}
		cl.Close()
		if err != nil {
			return fmt.Errorf("redisserver: cluster set-up: %w", err)
		}
	}
	return nil
}

// replicate makes each replica follow its primary and waits until it is
// in sync and the cluster is ok again.
func (c *Cluster) replicate(ctx context.Context) error {
	for i, r := range c.Replicas {
		p := c.Nodes[i%len(c.Nodes)].Client()
		id, err := p.Do(ctx, "CLUSTER", "MYID").Text()
		p.Close()
		if err == nil {
			cl := r.Client()
			err = cl.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
			cl.Close()
		}
		if err == nil {
			err = waitReplication(r, "master_link_status:up", "the replica did not catch up", 20*time.Second)
		}
		if err != nil {
			return fmt.Errorf("redisserver: cluster replica: %w", err)
		}
	}
	return c.waitOK(20 * time.Second)
}

// all is every node, primaries first.
func (c *Cluster) all() []*Server { return append(slices.Clip(c.Nodes), c.Replicas...) }

// waitOK polls every node until each reports cluster_state:ok, knows
// every other node and has heard of the greatest epoch, so that a node
// that bumps its own (closing a slot's import) outranks every other.
func (c *Cluster) waitOK(limit time.Duration) error {
	return poll.Until(limit, 20*time.Millisecond, func() error {
		for _, s := range c.all() {
			cl := s.Client()
			info, err := cl.ClusterInfo(context.Background()).Result()
			nodes, nerr := cl.ClusterNodes(context.Background()).Result()
			cl.Close()
			if err != nil || nerr != nil || !strings.Contains(info, "cluster_state:ok") || currentEpoch(info) < len(c.all()) ||
				strings.Count(strings.TrimSpace(nodes), "\n")+1 != len(c.all()) {
				return fmt.Errorf("redisserver: the cluster is not ok at %s", s.Addr)
			}
		}
		return nil
	})
}

// currentEpoch is the cluster_current_epoch of a CLUSTER INFO reply, or
// -1.
func currentEpoch(info string) int {
	_, rest, _ := strings.Cut(info, "cluster_current_epoch:")
	n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		return -1
	}
	return n
}

// URL is the cluster in go-redis's ParseClusterURL form.
func (c *Cluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr
	for i, s := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + s.Addr
	}
	return u
}

// Client returns a cluster client.
func (c *Cluster) Client() *redis.ClusterClient {
	var addrs []string
	for _, s := range c.Nodes {
		addrs = append(addrs, s.Addr)
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRetries: -1})
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.all() {
		s.Stop()
	}
}

// ClusterForTest starts a three-primary cluster for t and stops it when t
// ends; without redis-server the test is skipped.
func ClusterForTest(t TB) *Cluster {
	t.Helper()
	return clusterForTest(t, 0)
}

// ReplicatedClusterForTest starts a cluster of three primaries, each with
// one replica, for t, and stops it when t ends; without redis-server the
// test is skipped.
func ReplicatedClusterForTest(t TB) *Cluster {
	t.Helper()
	return clusterForTest(t, 1)
}

func clusterForTest(t TB, replicas int) *Cluster {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("Redis Cluster"))
	}
	c, err := StartCluster(3, replicas)
	if errors.Is(err, ErrNoServer) {
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// Announce makes node tell clients to reach it at port (a Proxy's, say)
// instead of its own, and waits until every node's map of the slots says
// so. The nodes still talk to each other on their own ports.
func (c *Cluster) Announce(node *Server, port int) error {
	cl := node.Client()
	err := cl.ConfigSet(context.Background(), "cluster-announce-port", strconv.Itoa(port)).Err()
	cl.Close()
	if err != nil {
		return fmt.Errorf("redisserver: announce: %w", err)
	}
	return poll.Until(20*time.Second, 20*time.Millisecond, func() error {
		for _, s := range c.all() {
			cl := s.Client()
			shards, err := cl.ClusterShards(context.Background()).Result()
			cl.Close()
			if err != nil {
				return err
			}
			if !announces(shards, port) {
				return fmt.Errorf("redisserver: %s does not announce port %d yet", s.Addr, port)
			}
		}
		return nil
	})
}

// announces reports whether a primary in shards is at port.
func announces(shards []redis.ClusterShard, port int) bool {
	for _, sh := range shards {
		for _, n := range sh.Nodes {
			if n.Role == "master" && n.Port == int64(port) {
				return true
			}
		}
	}
	return false
}
