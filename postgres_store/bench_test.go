package postgresstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/storetest"
)

// BenchmarkHit compares a fixed-window hit with SELECT 1 and a one-row
// UPDATE on the private server (go test -run '^$' -bench Hit
// ./postgres_store; BENCH_PG_PARAMS=?synchronous_commit=on to wait for
// the flush).
func BenchmarkHit(b *testing.B) {
	if server == nil {
		b.Skip("PostgreSQL's server not found: install it with " + sqlserver.PostgresInstallHint)
	}
	url := server.DSN + os.Getenv("BENCH_PG_PARAMS")
	pool := open(b, url, 5*time.Second)
	s := connect(b, url, 5*time.Second)(storetest.Options{Prefix: "bench_", Timeout: 5 * time.Second})
	storetest.BenchHit(b, s, func(q string) error { _, err := pool.Exec(context.Background(), q); return err })
}
