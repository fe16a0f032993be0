package httphost_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
)

// An instance's connection budget is its processes that hold a store at
// once times each one's connections, a cgi program one, plus the one the
// front's breaker watcher pings on.
func TestConnBudget(t *testing.T) {
	for _, c := range []struct {
		cfg          httphost.Config
		procs, conns int
	}{
		{httphost.Config{Model: harness.Single}, 1, 11},
		{httphost.Config{Model: harness.Single, App: harness.App{Conns: 3}}, 1, 4},
		{httphost.Config{Model: harness.Pool, Workers: 11, App: harness.App{Conns: 10}}, 11, 111},
		{httphost.Config{Model: harness.TwoHosts, Workers: 4, App: harness.App{Conns: 5}}, 8, 41},
		{httphost.Config{Model: harness.CGI, CGIProcs: 8, App: harness.App{Conns: 5}}, 8, 9},
		{httphost.Config{Model: harness.CGI}, httphost.DefaultCGIProcs, httphost.DefaultCGIProcs + 1},
	} {
		assert.Equal(t, c.procs, c.cfg.StoreProcs(), "%+v", c.cfg)
		assert.Equal(t, c.conns, c.cfg.ConnBudget(10), "%+v", c.cfg)
	}
}
