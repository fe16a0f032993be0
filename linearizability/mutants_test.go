package linearizability_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A mutant is one bug the checker must find, made in a copy of the
// repository: old, which must occur exactly once in file, becomes new,
// and ratelab check with args must say not linearizable.
type mutant struct {
	name, file, old, new string
	args                 []string
}

// mutants are bugs of the table made in the code itself rather
// than in a test's copy of a step: decision bugs in package algorithm and
// in the Redis store's script, a middleware that answers what no hit
// decided, and a file store that holds no lock.
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
	{"the file store holds no lock", "fixed_filestore/lock.go",
		"\tif err := lockWithin(ctx, fd, lockExclusive, s.lockWait); err != nil {", "\tif err := error(nil); err != nil {",
		[]string{"-store", "file", "-model", "pool", "-runs", "50"}}, // a lost update is left to chance: up to 50 histories, until one shows it
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
			if out, err := exec.Command(bin, append([]string{"check"}, m.args...)...).CombinedOutput(); err != nil {
				t.Errorf("check %v on the unmutated code: %v\n%s", m.args, err, out)
			}
		}
	})
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
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
// in every run these find it, at least. It takes about 7 s a table run
// on a busy 2-core machine, so it runs only when asked (make detection).
func TestDetectionRate(t *testing.T) {
	runs := os.Getenv("RATELAB_DETECTION")
	if runs == "" {
		t.Skip("runs the table's pool rows many times on a mutant: set RATELAB_DETECTION=300 (make detection) to run it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(mutants, func(m mutant) bool { return m.name == "the file store holds no lock" })
	bin := mutants[i].build(t, root)
	out, err := exec.Command(bin, "check", "-rows", "^file, pool", "-runs", runs).Output()
	t.Logf("ratelab check -rows '^file, pool' -runs %s, the file store holding no lock:\n%s", runs, out)
	if want := fmt.Sprintf("the table ran %s times; every verdict was the one claimed in 0 of them\n", runs); err == nil || !strings.Contains(string(out), want) {
		t.Errorf("got %v, want exit 1 and %q", err, want)
	}
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
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "./harness/cmd/ratelab")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build in the copy: %v\n%s", err, out)
	}
	return bin
}
