package redisserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
	"github.com/redis/go-redis/v9"
)

// Cluster is a running private Redis Cluster of primaries without
// replicas, each a Server, the 16384 hash slots split evenly among them.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n redis-servers in cluster mode, gives each an even
// share of the slots, introduces them to each other and waits until every
// node says the cluster is ok.
func StartCluster(n int) (*Cluster, error) {
	c := &Cluster{}
	for range n {
		s, err := Start("--cluster-enabled", "yes", "--cluster-node-timeout", "5000")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	ctx := context.Background()
	for i, s := range c.Nodes {
		cl := s.Client()
		err := cl.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", i*16384/n, (i+1)*16384/n-1).Err()
		if err == nil && i > 0 {
			host, port, _ := strings.Cut(c.Nodes[0].Addr, ":")
			err = cl.ClusterMeet(ctx, host, port).Err()
		}
		cl.Close()
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("redisserver: cluster set-up: %w", err)
		}
	}
	if err := c.waitOK(20 * time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// waitOK polls every node until each reports cluster_state:ok and knows
// every other node.
func (c *Cluster) waitOK(limit time.Duration) error {
	return poll.Until(limit, 20*time.Millisecond, func() error {
		for _, s := range c.Nodes {
			cl := s.Client()
			info, err := cl.ClusterInfo(context.Background()).Result()
			nodes, nerr := cl.ClusterNodes(context.Background()).Result()
			cl.Close()
			if err != nil || nerr != nil || !strings.Contains(info, "cluster_state:ok") || strings.Count(strings.TrimSpace(nodes), "\n")+1 != len(c.Nodes) {
				return fmt.Errorf("redisserver: the cluster is not ok at %s", s.Addr)
			}
		}
		return nil
	})
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
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// ClusterForTest starts a three-primary cluster for t and stops it when t
// ends; without redis-server the test is skipped.
func ClusterForTest(t TB) *Cluster {
	t.Helper()
	c, err := StartCluster(3)
	if errors.Is(err, ErrNoServer) {
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}
