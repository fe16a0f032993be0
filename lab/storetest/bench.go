package storetest

import (
	"context"
	"testing"
)

// BenchHit compares a fixed-window hit of s with the round trips it
// cannot go below, through the same connection pool (exec runs one
// statement): SELECT 1, and the cheapest write, a one-row UPDATE
// committed on its own, on a table bench_write that it creates.
func BenchHit(b *testing.B, s DatabaseStore, exec func(q string) error) {
	if err := s.CheckServer(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, q := range []string{"DROP TABLE IF EXISTS bench_write", "CREATE TABLE bench_write (k int PRIMARY KEY, n bigint NOT NULL)", "INSERT INTO bench_write VALUES (1, 0)"} {
		if err := exec(q); err != nil {
			b.Fatal(err)
		}
	}
	r := Original
	r.Limit = 1 << 26
	for _, v := range []struct {
		name string
		run  func() error
	}{
		{"select1", func() error { return exec("SELECT 1") }},
		{"update", func() error { return exec("UPDATE bench_write SET n = n + 1 WHERE k = 1") }},
		{"fixed", func() error { _, err := s.TakeAt(context.Background(), r, "k", T0); return err }},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				if err := v.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
