package poll

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff waits before try number try+1 of what a busy server turned
// away: 1 ms doubling to 32 ms, each wait drawn at random from half to one
// and a half times that, so that the processes turned away together do
// not all come back together. It reports false if ctx ends first, at once
// if its deadline comes before the wait would end.
func Backoff(ctx context.Context, try int) bool {
	d := time.Millisecond << min(try, 5)
	sleep := d/2 + rand.N(d)
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < sleep {
		return false // ctx would end during the wait
	}
	t := time.NewTimer(sleep)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
