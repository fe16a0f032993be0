//go:build !race

package redisstore

import (
	"testing"
	"time"

	"github.com/ratelab/ratelab"
)

// A hit builds its Redis key in one allocation, the key itself: the state
// key is hashed from the stack and the digest hex-encoded in place. (The
// race detector allocates more, hence the build line.)
func TestKeyAllocatesOnce(t *testing.T) {
	s := &Store{prefix: "ratelab:"}
	r := ratelab.Rule{Name: "demo", Limit: 30, Window: time.Hour, Algorithm: ratelab.FixedWindow}
	if got := testing.AllocsPerRun(100, func() { _ = s.key(r, "ip:203.0.113.7") }); got != 1 {
		t.Errorf("key: %v allocations, want 1", got)
	}
}
