//go:build linux

package racetests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

// straceRule and straceT0 are the hits of TestTheModelledHitIsTheStores:
// ten at straceT0, then one a window later, whose state is one byte
// shorter ({"count":1,…} over {"count":10,…}), so that the store makes
// every call the model has, the truncation included.
var (
	straceRule = ratelab.Rule{Name: "t", Limit: 30, Window: time.Hour}.Normalized()
	straceT0   = time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
)

// straceHitDir, in the environment, makes TestStraceHelperHit the one hit
// traced.
const straceHitDir = "RATELAB_STRACE_HIT_DIR"

// TestStraceHelperHit is the traced process of
// TestTheModelledHitIsTheStores: one hit of the compiled file store.
func TestStraceHelperHit(t *testing.T) {
	dir := os.Getenv(straceHitDir)
	if dir == "" {
		t.Skip("not a test by itself: TestTheModelledHitIsTheStores runs it as a child, under strace")
	}
	if err := storeHits(dir, 1, straceT0.Add(straceRule.Window)); err != nil {
		t.Fatal(err)
	}
}

// storeHits takes n hits at now on the file store in dir.
func storeHits(dir string, n int, now time.Time) error {
	s, err := fixedfilestore.New(dir, fixedfilestore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	for range n {
		if _, err := s.TakeAt(context.Background(), straceRule, "k", now); err != nil {
			return err
		}
	}
	return nil
}

// The schedules run race_tests' copy of the store's hit (storeHit), not
// the compiled store: this test traces the compiled store's hit with
// strace(1) and fails when its system calls on the state file are not the
// model's steps, in the model's order. Its explicit unlock just before
// close is close's in the model, which releases the lock.
func TestTheModelledHitIsTheStores(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not found: install it (apt-get install strace) to compare the modelled hit with the store's")
	}
	dir := t.TempDir()
	if err := storeHits(dir, 10, straceT0); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command("strace", "-f", "-y", "-qq", "-o", trace,
		"-e", "trace=openat,flock,fstat,newfstatat,pread64,read,pwrite64,write,ftruncate,close",
		os.Args[0], "-test.run=^TestStraceHelperHit$", "-test.count=1")
	cmd.Env = append(os.Environ(), straceHitDir+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("strace: %v\n%s", err, out)
	}
	b, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range protocols["store"]["hit"] {
		want = append(want, s.name)
	}
	if got := stateCalls(string(b)); !slices.Equal(got, want) {
		t.Errorf("the compiled store's hit makes %v on the state file; race_tests' storeHit models %v: update protocols.go (or the store)", got, want)
	}
}

// stateCall is one traced system call on a state file: its name and its
// first arguments.
var stateCall = regexp.MustCompile(`^(?:\d+\s+)?(\w+)\((.*?\.json[">,].*)$`)

// stateCalls lists the steps the trace's calls on the state file make, in
// the names protocols.go gives them.
func stateCalls(trace string) []string {
	names := map[string]string{"openat": "open", "fstat": "fstat", "newfstatat": "fstat", "pread64": "read", "read": "read",
		"pwrite64": "write", "write": "write", "ftruncate": "ftruncate", "close": "close"}
	var steps []string
	for line := range strings.SplitSeq(trace, "\n") {
		m := stateCall.FindStringSubmatch(line)
		switch {
		case m == nil || !strings.Contains(m[2], "rate-limits"):
		case m[1] == "flock" && strings.Contains(m[2], "LOCK_UN"):
			steps = append(steps, "unlock")
		case m[1] == "flock":
			steps = append(steps, "flock")
		case names[m[1]] != "":
			steps = append(steps, names[m[1]])
		}
	}
	if i := slices.Index(steps, "unlock"); i >= 0 && i+1 < len(steps) && steps[i+1] == "close" {
		steps = slices.Delete(steps, i, i+1)
	}
	return steps
}
