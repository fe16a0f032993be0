package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/lab/redisserver"
	"github.com/ratelab/ratelab/internal/lab/storetest"
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
	rule := ratelab.Rule{Name: "cluster", Limit: ratelab.MaxLimit, Window: time.Hour}
	now := time.Now()
	keys := []string{"ip:203.0.113.7", "ip:198.51.100.9", "ip:192.0.2.1", "ip:192.0.2.2", "ip:192.0.2.3", "ip:192.0.2.4"}
	newStore := func() *redisstore.Store {
		c, err := redisstore.NewClient(cl.URL(), 2*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Options{FailPolicy: ratelab.FailClosed, Timeout: 2 * time.Second})
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
	target, err := migrateSlot(ctx, cl, int(slot))
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

// migrateSlot moves slot from the node that holds it to the next one, as
// redis-cli --cluster reshard does, and returns the new owner's index.
func migrateSlot(ctx context.Context, cl *redisserver.Cluster, slot int) (int, error) {
	ids, owner, target, err := beginMigration(ctx, cl, slot)
	if err != nil {
		return 0, err
	}
	src := cl.Nodes[owner].Client()
	defer src.Close()
	host, port, _ := strings.Cut(cl.Nodes[target].Addr, ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return 0, err
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return 0, err
		}
	}
	for _, s := range cl.Nodes {
		c := s.Client()
		err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[target]).Err()
		c.Close()
		if err != nil {
			return 0, err
		}
	}
	return target, nil
}

// beginMigration marks slot as moving from the node that holds it to the
// next one (IMPORTING on the target, MIGRATING on the owner) and moves no
// key: a key the owner does not hold is then answered ASK. It returns the
// nodes' ids and the two nodes' indexes.
func beginMigration(ctx context.Context, cl *redisserver.Cluster, slot int) (ids []string, owner, target int, err error) {
	ids = make([]string, len(cl.Nodes))
	for i, s := range cl.Nodes {
		c := s.Client()
		ids[i], err = c.Do(ctx, "CLUSTER", "MYID").Text()
		c.Close()
		if err != nil {
			return nil, 0, 0, err
		}
	}
	owner = slot * len(cl.Nodes) / 16384 // StartCluster splits the slots evenly, in order
	target = (owner + 1) % len(cl.Nodes)
	src, dst := cl.Nodes[owner].Client(), cl.Nodes[target].Client()
	defer src.Close()
	defer dst.Close()
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[owner]).Err(); err != nil {
		return nil, 0, 0, err
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[target]).Err(); err != nil {
		return nil, 0, 0, err
	}
	return ids, owner, target, nil
}
