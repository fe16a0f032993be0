package beyondonehost

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/linearizability"
)

// go-redis reloads a client's map of the cluster after an ASK, and the
// reload may land after the move has ended: a client that met ASK may
// send its next hits straight to the new owner and never meet MOVED (a
// loaded CI run did, and the check failed). The run must meet MOVED even
// when every client that met ASK has the new map before the last phase.
func TestTheSlotMoveMeetsMovedWhenTheAskedClientsHaveReloaded(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	reload := func(m *redisserver.Move, asked []moveClient) error {
		target := cl.Nodes[m.Target].Addr
		for _, c := range asked {
			cc := c.conn.(*redis.ClusterClient)
			err := poll.Until(10*time.Second, 10*time.Millisecond, func() error {
				cc.ReloadState(ctx)
				n, err := cc.MasterForKey(ctx, c.key(moveRule(8, 8)))
				if err == nil && n.Options().Addr != target {
					err = errors.New("the client's map still names the old owner")
				}
				return err
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	h, err := moveHistory(ctx, cl, 8, 8, t.TempDir(), reload)
	if err != nil {
		t.Fatal(err)
	}
	v, err := linearizability.Check(h, "", time.Minute)
	if err != nil || !v.Linearizable {
		t.Errorf("got %v, %v; want linearizable", v, err)
	}
}
