//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/floor"
	"github.com/ratelab/ratelab/lab/bench"
)

var benchNow = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)

// benchDirEnv names the directory the benchmarks measure in: the
// filesystem under it is the one they time. Unset, they measure in
// b.TempDir(), which is under $TMPDIR, often another filesystem than the
// clone's.
const benchDirEnv = "RATELAB_BENCH_DIR"

// benchDir returns a fresh directory under $RATELAB_BENCH_DIR, or
// b.TempDir() when it is unset; either is removed when b ends.
func benchDir(b *testing.B) string {
	parent := os.Getenv(benchDirEnv)
	if parent == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(parent, "bench-")
	if err != nil {
		b.Fatalf("%s: %v", benchDirEnv, err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func newBenchStore(b *testing.B) *fixedfilestore.Store {
	s, err := fixedfilestore.New(benchDir(b), fixedfilestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchRules are make bench's: every hit writes.
func benchRules() []ratelab.Rule { return bench.Rules() }

// BenchmarkTake measures one hit of each algorithm and of the syscall
// floor separately, for benchstat.
func BenchmarkTake(b *testing.B) {
	for _, r := range benchRules() {
		b.Run(string(r.Algorithm), func(b *testing.B) {
			s, now := newBenchStore(b), benchNow
			for b.Loop() {
				now = now.Add(bench.Step)
				if d, err := s.TakeAt(context.Background(), r, "k", now); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
	b.Run("syscall-floor", func(b *testing.B) {
		dirfd := floorDir(b)
		state := algorithm.Fixed{Count: 17, ResetAt: benchNow.Unix() + 3600}.Append(nil)
		for b.Loop() {
			if err := floor.SyscallFloor(dirfd, "floor.json", state); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTakeRatios runs every algorithm and the syscall floor in turn,
// in one loop, so that the ratios it reports compare them under the same
// load on a shared, noisy machine. The targets are algorithm/floor ≤ 1.2,
// and ≤ 1.5 for the sliding log at limit 30. The original's truncate-first
// write is left out on purpose: its ext4 writeback slows whatever runs
// next (see BenchmarkTruncateFirst).
func BenchmarkTakeRatios(b *testing.B) {
	s, now := newBenchStore(b), benchNow
	rules := benchRules()
	dirfd := floorDir(b)
	state := algorithm.Fixed{Count: 17, ResetAt: benchNow.Unix() + 3600}.Append(nil)
	spent := make([]time.Duration, len(rules)+1)
	for b.Loop() {
		now = now.Add(bench.Step)
		t := time.Now()
		if err := floor.SyscallFloor(dirfd, "floor.json", state); err != nil {
			b.Fatal(err)
		}
		for i, r := range rules {
			t1 := time.Now()
			spent[len(rules)] += t1.Sub(t)
			if d, err := s.TakeAt(context.Background(), r, "k", now); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
			t = time.Now()
			spent[i] += t.Sub(t1)
		}
	}
	fl := spent[len(rules)]
	b.ReportMetric(float64(fl.Nanoseconds())/float64(b.N), "floor-ns/hit")
	for i, r := range rules {
		b.ReportMetric(float64(spent[i])/float64(fl), string(r.Algorithm)+"/floor")
	}
}

// BenchmarkTruncateFirst measures the original's write order against the
// store in its own loop, both in one directory, which it logs: the
// filesystem it is on is the one measured.
func BenchmarkTruncateFirst(b *testing.B) {
	dir := benchDir(b)
	b.Logf("measured in %s", dir)
	s, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	dirfd := openDir(b, dir)
	state := algorithm.Fixed{Count: 17, ResetAt: benchNow.Unix() + 3600}.Append(nil)
	var store, orig time.Duration
	r := benchRules()[0]
	for b.Loop() {
		t := time.Now()
		if _, err := s.TakeAt(context.Background(), r, "k", benchNow); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := floor.TruncateFirst(dirfd, "orig.json", state); err != nil {
			b.Fatal(err)
		}
		store, orig = store+t1.Sub(t), orig+time.Since(t1)
	}
	b.ReportMetric(float64(orig)/float64(store), "truncfirst/store")
}

// floorDir opens a fresh directory for the floor's files, closed when b
// ends.
func floorDir(b *testing.B) int { return openDir(b, benchDir(b)) }

// openDir opens dir for the floor's files, closed when b ends.
func openDir(b *testing.B, dir string) int {
	fd, err := floor.OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { syscall.Close(fd) })
	return fd
}
