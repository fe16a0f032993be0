package harness_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ratelab/ratelab/harness"
)

// An instance's connection budget is its processes that hold a store at
// once times each one's connections: the front holds none, a cgi program
// one.
func TestConnBudget(t *testing.T) {
	for _, c := range []struct {
		cfg          harness.Config
		procs, conns int
	}{
		{harness.Config{Model: harness.Single}, 1, 10},
		{harness.Config{Model: harness.Single, App: harness.App{Conns: 3}}, 1, 3},
		{harness.Config{Model: harness.Pool, Workers: 11, App: harness.App{Conns: 10}}, 11, 110},
		{harness.Config{Model: harness.TwoHosts, Workers: 4, App: harness.App{Conns: 5}}, 8, 40},
		{harness.Config{Model: harness.CGI, CGIProcs: 8, App: harness.App{Conns: 5}}, 8, 8},
		{harness.Config{Model: harness.CGI}, harness.DefaultCGIProcs, harness.DefaultCGIProcs},
	} {
		assert.Equal(t, c.procs, c.cfg.StoreProcs(), "%+v", c.cfg)
		assert.Equal(t, c.conns, c.cfg.ConnBudget(10), "%+v", c.cfg)
	}
}
