package databaselock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/lab/flood"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// #44 item 7: a database server that hangs (every process stopped) was a
// full outage under fail-open — every hit waited its 2 s and was refused
// as load (503). The front's breaker sees the server not answer its pings
// and opens: each request is then decided by the policy at once, let
// through; when the server wakes the breaker closes within a ping, and a
// new client gets exactly the limit. The figures go to the log (-v).
func TestAHungDatabaseIsDecidedByThePolicyAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("hangs private database servers under a pool and CGI; skipped with -short")
	}
	// Beside the package's other flood (TestLoadIsNotAnOutage), which
	// keeps the processors busy while this one mostly waits for a hung
	// server's timeouts: each on servers of its own.
	t.Parallel()
	servers := map[harness.StoreKind]func(sqlserver.TB) *sqlserver.Server{
		databaselock.MySQL: sqlserver.MariaDBForTest, databaselock.Postgres: sqlserver.PostgresForTest}
	exe := flood.Binary(t)
	for _, kind := range []harness.StoreKind{databaselock.MySQL, databaselock.Postgres} {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel() // a server of its own each
			srv := servers[kind](t)
			for _, model := range []harness.Model{harness.Pool, harness.CGI} {
				t.Run(string(model), func(t *testing.T) {
					a := harness.App{Store: kind, Server: srv.DSN, Conns: 4, Prefix: fmt.Sprintf("hung_%s_", model)}
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err := databaselock.CheckDatabase(ctx, a) // its tables, as serve makes them before it starts
					cancel()
					require.NoError(t, err)
					flood.Hung(t, a, model, 4, exe, srv.Pause)
				})
			}
		})
	}
}
