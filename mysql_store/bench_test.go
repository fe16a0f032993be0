package mysqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratelab/ratelab/lab/sqlserver"
	"github.com/ratelab/ratelab/lab/storetest"
)

// BenchmarkHit compares a fixed-window hit with SELECT 1 and a one-row
// UPDATE on the private server (go test -run '^$' -bench Hit
// ./mysql_store).
func BenchmarkHit(b *testing.B) {
	if server == nil {
		b.Skip("mariadbd not found: install it with " + sqlserver.MariaDBInstallHint)
	}
	url := server.DSN
	pool := open(b, url, 5*time.Second)
	s := connect(b, url, 5*time.Second)(storetest.Options{Prefix: "bench_", Timeout: 5 * time.Second})
	storetest.BenchHit(b, s, func(q string) error { _, err := pool.ExecContext(context.Background(), q); return err })
}
