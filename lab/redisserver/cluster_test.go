package redisserver

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The finding (CI, stop 48): a slot moved by MoveSlot stayed with its old
// owner on one node and with the new one on the other, and every hit on
// it bounced between them (MOVED) until the test gave up. The nodes of a
// new cluster all had config epoch 0 and settled their collisions by
// gossip for seconds after it was ok; a node closing an import bumped
// its epoch to one the old owner had already taken, and the old owner's
// older claim won the slot back. Every primary of a started cluster now
// has an epoch of its own, and every node knows the greatest, before
// StartCluster returns.
func TestClusterPrimariesHaveEpochsOfTheirOwn(t *testing.T) {
	if !Available() {
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
	c, err := StartCluster(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	line := regexp.MustCompile(`(?m)^cluster_current_epoch:(\d+)\r?$`)
	for _, s := range c.Nodes {
		cl := s.Client()
		nodes, err := cl.ClusterNodes(context.Background()).Result()
		info, ierr := cl.ClusterInfo(context.Background()).Result()
		cl.Close()
		if err != nil || ierr != nil {
			t.Fatalf("%s: %v, %v", s.Addr, err, ierr)
		}
		seen := map[string]string{}
		var greatest int
		for l := range strings.Lines(strings.TrimSpace(nodes)) {
			f := strings.Fields(l) // id addr flags master ping pong epoch link slots…
			if !strings.Contains(f[2], "master") {
				continue
			}
			if other, ok := seen[f[6]]; ok {
				t.Errorf("%s: primaries %.8s and %.8s both have config epoch %s; want one each", s.Addr, other, f[0], f[6])
			}
			seen[f[6]] = f[0]
			e, _ := strconv.Atoi(f[6])
			greatest = max(greatest, e)
		}
		m := line.FindStringSubmatch(info)
		if m == nil {
			t.Fatalf("%s: no cluster_current_epoch in CLUSTER INFO", s.Addr)
		}
		if cur, _ := strconv.Atoi(m[1]); cur < greatest {
			t.Errorf("%s: current epoch %d below the greatest config epoch it lists, %d", s.Addr, cur, greatest)
		}
	}
}
