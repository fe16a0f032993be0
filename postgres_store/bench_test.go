package postgresstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	postgresstore "github.com/ratelab/ratelab/postgres_store"

	"github.com/ratelab/ratelab/internal/storetest"
)

// BenchmarkHit compares a fixed-window hit with the round trips it cannot
// go below: SELECT 1 and the cheapest write, a one-row UPDATE committed on
// its own (go test -run '^$' -bench Hit ./postgres_store).
func BenchmarkHit(b *testing.B) {
	if server == nil {
		b.Skip("PostgreSQL's server not found")
	}
	pool, err := postgresstore.OpenPool(server.DSN+os.Getenv("BENCH_PG_PARAMS"), 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	s, err := postgresstore.New(pool, postgresstore.Options{Prefix: "bench_", Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.CheckServer(ctx); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{"DROP TABLE IF EXISTS bench_write", "CREATE TABLE bench_write (k int PRIMARY KEY, n bigint NOT NULL)", "INSERT INTO bench_write VALUES (1, 0)"} {
		if _, err := pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("select1", func(b *testing.B) {
		for b.Loop() {
			if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("update", func(b *testing.B) {
		for b.Loop() {
			if _, err := pool.Exec(ctx, "UPDATE bench_write SET n = n + 1 WHERE k = 1"); err != nil {
				b.Fatal(err)
			}
		}
	})
	r := storetest.Original
	r.Limit = 1 << 26
	b.Run("fixed", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.TakeAt(ctx, r, "k", storetest.T0); err != nil {
				b.Fatal(err)
			}
		}
	})
}
