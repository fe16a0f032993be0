//go:build unix

package beyondonehost_test

import (
	"testing"

	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/lab/flood"
	"github.com/ratelab/ratelab/lab/redisserver"
)

// #44 item 7, for Redis: a Redis that hangs let fail-open requests through,
// but each after its 2 s timeout, and under CGI 454 of 1000 were answered
// 503 (the front's queue full of waiting programs). The front's breaker
// sees Redis not answer its pings and opens: each request is then let
// through at once; when Redis wakes the breaker closes within a ping, and
// a new client gets exactly the limit. The figures go to the log (-v).
func TestAHungRedisIsDecidedByThePolicyAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("hangs a private Redis under a pool and CGI; skipped with -short")
	}
	// Beside the package's other flood (TestLoadIsNotAnOutage), which
	// keeps the processors busy while this one mostly waits for a hung
	// server's timeouts: each on servers of its own.
	t.Parallel()
	exe := flood.Binary(t)
	for _, model := range []harness.Model{harness.Pool, harness.CGI} {
		t.Run(string(model), func(t *testing.T) {
			t.Parallel() // a Redis of its own each
			srv := redisserver.ForTest(t)
			flood.Hung(t, harness.App{Store: beyondonehost.Redis, Server: srv.URL()}, model, 4, exe, srv.Pause)
		})
	}
}
