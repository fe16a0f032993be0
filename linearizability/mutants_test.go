package linearizability_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/weave"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// A mutant is one bug the checker must find, made in a copy of the
// repository: old, which must occur exactly once in file, becomes new,
// and ratelab check with args must say not linearizable.
type mutant struct {
	name, file, old, new string
	args                 []string
}

// mutants are bugs made in the code itself rather than in a test's copy
// of a step: decision bugs in package algorithm and in the Redis store's
// scripts; a middleware and a front that answer what no hit decided; a
// file store that counts a hit and then fails it; and stores that lose
// updates — the file store without its lock or unlocking before it
// writes, the Redis store deciding in Go between a GET and a SET, the
// PostgreSQL store letting go of the row between its read and its write.
// A lost update is left to chance: those run several histories, until one
// shows it.
var mutants = []mutant{
	{"the fixed window allows limit+1", "algorithm/fixed.go",
		"Allowed:    count <= r.Limit,", "Allowed:    count <= r.Limit+1,",
		[]string{"-store", "file", "-model", "pool"}},
	{"the fixed window resets a second late", "algorithm/fixed.go",
		"if s.ResetAt <= t {", "if s.ResetAt < t {",
		[]string{"-store", "file", "-model", "pool", "-window", "1s", "-speed", "5"}},
	{"GCRA allows one interval more of burst", "algorithm/gcra.go",
		"allowAt := newTAT - r.Burst*interval", "allowAt := newTAT - (r.Burst+1)*interval",
		[]string{"-store", "file", "-model", "pool", "-algorithm", "gcra"}},
	{"the Redis store's GCRA script allows one interval more of burst", "redis_store/scripts.go",
		"local allowat = tat + interval - burstOff", "local allowat = tat - burstOff",
		[]string{"-store", "redis", "-model", "pool", "-algorithm", "gcra"}},
	{"the middleware answers 200 to a refused hit", "httplimit/middleware.go",
		"\tdefault:\n\t\tl.count(d.Rule.Name, refusedOutcome(d))", "\tdefault:\n\t\tl.count(d.Rule.Name, refusedOutcome(d))\n\t\tl.next.ServeHTTP(w, r)\n\t\treturn",
		[]string{"-store", "file", "-model", "single"}},
	{"the Redis fixed-window script resets a second late", "redis_store/fixed.go",
		"if r and r > t and r <= live", "if r and r >= t and r <= live",
		[]string{"-store", "redis", "-model", "pool", "-window", "1s", "-speed", "5"}},
	{"the front answers every 5th request without calling the limiter", "http_host/pool.go",
		"\t\tw := h.pool.pick()\n", "\t\tif n := r.Header.Get(RequestHeader); len(n) > 2 && (n[len(n)-2:] == \"-5\" || n[len(n)-3:] == \"-10\") {\n" +
			"\t\t\treturn // every 5th request of a client: 200, and no hit\n\t\t}\n\t\tw := h.pool.pick()\n",
		[]string{"-store", "file", "-model", "pool"}},
	{"the file store counts a hit, then fails it", "fixed_filestore/hit.go",
		"\treturn res.Decision, nil\n}", "\treturn res.Decision, errors.New(\"counted, then failed\")\n}",
		[]string{"-store", "file", "-model", "pool", "-fault", "kill"}},
	{"the Redis store reads and writes the window from Go", "redis_store/fixed.go",
		"\tvals, err := s.run(ctx, fixedWindow, []string{rkey, both}, fixedArgs(r, now)...)\n",
		"\tvals, err := func() ([]int64, error) { // GET, decide in Go, SET: no script\n" +
			"\t\tc, _ := s.rdb.Get(ctx, rkey).Int64()\n" +
			"\t\treset, _ := s.rdb.Get(ctx, both).Int64()\n" +
			"\t\tif t := now.Unix(); reset <= t {\n\t\t\tc, reset = 0, t+int64(r.Window/time.Second)\n\t\t}\n" +
			"\t\tc++\n" +
			"\t\tif err := s.rdb.Set(ctx, rkey, c, 0).Err(); err != nil {\n\t\t\treturn nil, err\n\t\t}\n" +
			"\t\treturn []int64{c, reset}, s.rdb.Set(ctx, both, reset, 0).Err()\n\t}()\n",
		[]string{"-store", "redis", "-model", "pool", "-runs", "5"}},
	{"the PostgreSQL store holds no row lock", "postgres_store/store.go",
		"\tb.Queue(\"BEGIN\")\n", "\tb.Queue(\"SELECT 1\") // the upsert's row lock ends with its own statement\n",
		[]string{"-store", "postgres", "-model", "pool", "-algorithm", "sliding", "-runs", "5"}},
	{"the file store unlocks before it writes", "fixed_filestore/hit.go",
		"\tif err := s.writeState(fd, name, res.State, len(old)); err != nil {\n", "\tfunlock(fd)\n\tif err := s.writeState(fd, name, res.State, len(old)); err != nil {\n",
		[]string{"-store", "file", "-model", "pool", "-runs", "50"}},
	{"the file store holds no lock", "fixed_filestore/lock.go",
		"\tif err := lockWithin(ctx, fd, lockExclusive, s.lockWait); err != nil {", "\tif err := error(nil); err != nil {",
		[]string{"-store", "file", "-model", "pool", "-runs", "50"}},
}

// TestMutantsInTheCode makes each mutant in a copy of the repository,
// builds ratelab there and runs its check: every one must be reported
// not linearizable, and the unmutated copy must pass the same checks. It
// builds the command once per mutant, so it runs only when asked:
// RATELAB_MUTANTS=1 (make mutants; CI runs it).
func TestMutantsInTheCode(t *testing.T) {
	if os.Getenv("RATELAB_MUTANTS") == "" {
		t.Skip("builds ratelab once per mutant: set RATELAB_MUTANTS=1 (make mutants) to run it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("unmutated", func(t *testing.T) {
		bin := build(t, copyRepo(t, root))
		for _, m := range mutants {
			if missing(m) != "" {
				continue
			}
			if out, err := exec.Command(bin, append([]string{"check"}, m.args...)...).CombinedOutput(); err != nil {
				t.Errorf("check %v on the unmutated code: %v\n%s", m.args, err, out)
			}
		}
	})
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			if hint := missing(m); hint != "" {
				t.Skip(hint)
			}
			out, err := exec.Command(m.build(t, root), append([]string{"check"}, m.args...)...).CombinedOutput()
			if err == nil || !strings.Contains(string(out), "not linearizable") {
				t.Errorf("check %v with %s: got %v, want exit 1 and \"not linearizable\"\n%s", m.args, m.name, err, out)
			}
		})
	}
}

// TestDetectionRate measures how often the table finds the missing lock:
// it runs the table's file-store rows under a pool, RATELAB_DETECTION
// times, on a copy of the code whose file store holds no lock, and fails
// unless every one of those table runs had a verdict other than the one
// claimed. The full table runs these rows and more, so it finds the bug
// in every run these find it, at least. It takes about 5 s a table run
// on a busy 2-core machine, so it runs only when asked (make detection).
func TestDetectionRate(t *testing.T) {
	runs := os.Getenv("RATELAB_DETECTION")
	if runs == "" {
		t.Skip("runs the table's pool rows many times on a mutant: set RATELAB_DETECTION=300 (make detection) to run it")
	}
	if n, err := strconv.Atoi(runs); err != nil || n < 2 || n > 1000 {
		t.Fatalf("RATELAB_DETECTION=%q: a number of table runs from 2 to 1000", runs)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(mutants, func(m mutant) bool { return m.name == "the file store holds no lock" })
	bin := mutants[i].build(t, root)
	var stderr strings.Builder
	cmd := exec.Command(bin, "check", "-rows", "^file, pool", "-runs", runs)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() != 1 {
		t.Fatalf("ratelab check: %v, want exit 1\n%s", err, stderr.String())
	}
	t.Logf("ratelab check -rows '^file, pool' -runs %s, the file store holding no lock:\n%s", runs, out)
	if want := fmt.Sprintf("the table ran %s times; every verdict was the one claimed in 0 of them\n", runs); err == nil || !strings.Contains(string(out), want) {
		t.Errorf("got %v, want exit 1 and %q", err, want)
	}
}

// missing says what to install when m's check needs a server this
// machine does not have, whose private instance it cannot start; "" if
// none is missing.
func missing(m mutant) string {
	switch m.args[slices.Index(m.args, "-store")+1] {
	case "redis":
		if !redisserver.Available() {
			return "redis-server not found; install it with " + redisserver.InstallHint
		}
	case "postgres":
		if !sqlserver.PostgresAvailable() {
			return "postgres not found; install it with " + sqlserver.PostgresInstallHint
		}
	}
	return ""
}

// build makes m in a copy of the repository at root and builds ratelab
// there.
func (m mutant) build(t *testing.T, root string) string {
	t.Helper()
	dir := copyRepo(t, root)
	path := filepath.Join(dir, m.file)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), m.old); n != 1 {
		t.Fatalf("%s holds %q %d times, want once: the mutant no longer applies", m.file, m.old, n)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), m.old, m.new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return build(t, dir)
}

// copyRepo copies the files git tracks under root into a new directory.
func copyRepo(t *testing.T, root string) string {
	t.Helper()
	files, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// build builds ratelab in dir, as make does, and returns its path.
func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin", "ratelab")
	if out, err := weave.Build(dir, bin).CombinedOutput(); err != nil {
		t.Fatalf("go build in the copy: %v\n%s", err, out)
	}
	return bin
}
