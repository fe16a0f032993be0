package beyondonehost

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/linearizability"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// MoveKey is the key every hit of ClusterMoveHistory takes.
const MoveKey = "ip:203.0.113.7"

// ClusterMoveHistory records, in a directory it makes in tmp and removes,
// a history of clients hitting one key of a private Redis Cluster of
// three primaries (the fixed window: two Redis keys in one slot) while
// that key's slot moves to another primary, as redis-cli --cluster
// reshard moves it. The clients send hits/4 hits each in four phases,
// all clients of a phase at once: before the move; once it has begun
// (the slot MIGRATING on its owner, which still holds the keys); once the
// keys have gone (the owner answers ASK, the importing node serves them),
// half of the clients; and after it has ended (the old owner answers
// MOVED). The phases are kept apart, so every run has hits in every state
// of the move: go-redis reloads a client's map of the cluster after an
// ASK, and the reload may land after the move has ended, so the half
// that sat out the third phase still name the old owner in the last one.
// Half the hits are allowed. A hit that fails is an error: the store
// follows every redirect.
func ClusterMoveHistory(ctx context.Context, clients, hits int, tmp string) (linearizability.History, error) {
	if clients < 2 || hits < 4 {
		return linearizability.History{}, errors.New("beyondonehost: a slot move needs at least 2 clients and 4 hits each")
	}
	cl, err := redisserver.StartCluster(3, 0)
	if err != nil {
		return linearizability.History{}, err
	}
	defer cl.Stop()
	return moveHistory(ctx, cl, clients, hits, tmp, func(*redisserver.Move, []moveClient) error { return nil })
}

// moveHistory is ClusterMoveHistory on cl; moved runs once the move has
// ended, before the last phase, with the clients that met ASK (the first
// half).
func moveHistory(ctx context.Context, cl *redisserver.Cluster, clients, hits int, tmp string, moved func(m *redisserver.Move, asked []moveClient) error) (linearizability.History, error) {
	rule := moveRule(clients, hits)
	return linearizability.RecordHere(tmp, func(rec *linearizability.Recorder) error {
		stores, closeAll, err := clusterStores(cl.URL(), clients, rec)
		if err != nil {
			return err
		}
		defer closeAll()
		admin := cl.Client()
		slot, err := admin.ClusterKeySlot(ctx, stores[0].key(rule)).Result()
		admin.Close()
		if err != nil {
			return fmt.Errorf("beyondonehost: %w", err)
		}
		var move *redisserver.Move
		steps := []func() error{
			func() (err error) { move, err = cl.BeginMove(ctx, int(slot)); return err },
			func() error { return move.MigrateAll(ctx) },
			func() error { return move.Finish(ctx) },
		}
		for phase := range 4 {
			who, err := stores, error(nil)
			if phase > 0 {
				err = steps[phase-1]()
			}
			switch {
			case err != nil:
				return err
			case phase == 2: // the keys gone: half the clients meet ASK
				who, err = stores[:clients/2], answered(ctx, cl.Nodes[move.Owner], false, "ASK", "MOVED")
			case phase == 3:
				err = moved(move, stores[:clients/2])
			}
			if err == nil {
				err = hitAtOnce(ctx, who, rule, hits/4)
			}
			if err != nil {
				return fmt.Errorf("beyondonehost: phase %d of the move: %w", phase+1, err)
			}
		}
		return answered(ctx, cl.Nodes[move.Owner], true, "ASK", "MOVED")
	})
}

// moveRule is the rule of a move's hits: half of them allowed.
func moveRule(clients, hits int) ratelab.Rule {
	return ratelab.Rule{Name: "move", Limit: int64(max(MoveHits(clients, hits)/2, 1)), Window: time.Hour}.Normalized()
}

// MoveHits is how many hits ClusterMoveHistory sends: hits/4 from every
// client in three phases, and from half of them in the third.
func MoveHits(clients, hits int) int { return (3*clients + clients/2) * (hits / 4) }

// answered reports an error unless node has answered each of the
// redirects at least once (want) or none of them (!want): the hits met
// the slot in every state, and the half that sat out the third phase
// met no ASK before it.
func answered(ctx context.Context, node *redisserver.Server, want bool, redirects ...string) error {
	c := node.Client()
	defer c.Close()
	stats, err := c.Info(ctx, "errorstats").Result()
	if err != nil {
		return fmt.Errorf("beyondonehost: %w", err)
	}
	for _, r := range redirects {
		switch got := strings.Contains(stats, "errorstat_"+r+":"); {
		case want && !got:
			return fmt.Errorf("beyondonehost: the slot's old owner never answered %s: the hits missed a state of the move", r)
		case !want && got:
			return fmt.Errorf("beyondonehost: the slot's old owner answered %s before the keys moved", r)
		}
	}
	return nil
}

// moveClient is one client of ClusterMoveHistory: a connection to the
// cluster of its own, its hits recorded.
type moveClient struct {
	conn redis.UniversalClient
	raw  *redisstore.Store
	ratelab.Store
}

// key is the Redis key of rule's window for MoveKey.
func (c moveClient) key(rule ratelab.Rule) string { return c.raw.Key(rule, MoveKey) }

// clusterStores connects n clients to the cluster at url, each recorded
// by rec, and returns what closes them.
func clusterStores(url string, n int, rec *linearizability.Recorder) ([]moveClient, func(), error) {
	var out []moveClient
	var conns []interface{ Close() error }
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range n {
		c, err := redisstore.NewClient(url, 2*time.Second)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, c)
		s, err := redisstore.New(c, redisstore.Options{Timeout: 2 * time.Second})
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		out = append(out, moveClient{conn: c, raw: s, Store: rec.Store(s)})
	}
	return out, closeAll, nil
}

// hitAtOnce has every client send n hits, the clients at once, and
// returns the first error.
func hitAtOnce(ctx context.Context, clients []moveClient, rule ratelab.Rule, n int) error {
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for range n {
				if _, err := c.TakeAt(ctx, rule, MoveKey, time.Now()); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
