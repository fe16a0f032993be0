//go:build linux || darwin

package fixedfilestore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/floor"
)

var benchNow = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

func newBenchStore(b *testing.B) *fixedfilestore.Store {
	s, err := fixedfilestore.New(b.TempDir(), fixedfilestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkHit measures one hit of the store and of its two reference
// points separately, for benchstat.
func BenchmarkHit(b *testing.B) {
	state := fixedfilestore.Encode(nil, ratelab.State{Count: 17, ResetAt: benchNow.Unix() + 3600})
	b.Run("store", func(b *testing.B) {
		s := newBenchStore(b)
		for b.Loop() {
			if _, err := s.HitAt("k", time.Hour, benchNow); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("syscall-floor", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "floor.json")
		for b.Loop() {
			if err := floor.SyscallFloor(path, state); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("truncate-first", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "orig.json")
		for b.Loop() {
			if err := floor.TruncateFirst(path, state); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHitRatios runs the store, the syscall floor and the original's
// truncate-first write in turn, in one loop, so that the ratios it reports
// compare the three under the same load on a shared, noisy machine. The
// target is store/floor ≤ 2.5.
func BenchmarkHitRatios(b *testing.B) {
	s := newBenchStore(b)
	dir := b.TempDir()
	floorPath, origPath := filepath.Join(dir, "floor.json"), filepath.Join(dir, "orig.json")
	state := fixedfilestore.Encode(nil, ratelab.State{Count: 17, ResetAt: benchNow.Unix() + 3600})
	var store, fl, orig time.Duration
	for b.Loop() {
		t := time.Now()
		if _, err := s.HitAt("k", time.Hour, benchNow); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := floor.SyscallFloor(floorPath, state); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := floor.TruncateFirst(origPath, state); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		store, fl, orig = store+t1.Sub(t), fl+t2.Sub(t1), orig+t3.Sub(t2)
	}
	n := float64(b.N)
	b.ReportMetric(float64(store.Nanoseconds())/n, "store-ns/hit")
	b.ReportMetric(float64(fl.Nanoseconds())/n, "floor-ns/hit")
	b.ReportMetric(float64(orig.Nanoseconds())/n, "truncfirst-ns/hit")
	b.ReportMetric(float64(store)/float64(fl), "store/floor")
	b.ReportMetric(float64(orig)/float64(store), "truncfirst/store")
}
