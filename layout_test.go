package ratelab_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Imports point down, and what a program links is what it needs: a
// program that only counts hits — a CGI program, started once per request
// — does not link net/http (about 1.9 ms more per start), and the ratelab
// command does not link testing.
func TestWhatPackagesLink(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	tests := []struct {
		pkg, mustNot string
	}{
		{".", "net/http"},
		{"./algorithm", "net/http"},
		{"./broken_inmemory", "net/http"},
		{"./fixed_filestore", "net/http"},
		{"./redis_store", "net/http"},
		{"./harness/cmd/ratelab", "testing"},
		// Nothing under internal/ imports a lesson: imports point down.
		{"./internal/...", "github.com/ratelab/ratelab/race_tests"},
		{"./internal/...", "github.com/ratelab/ratelab/window_boundary"},
		{"./internal/...", "github.com/ratelab/ratelab/harness"},
		// The stores import the contract and the steps, never a lesson.
		{"./fixed_filestore", "github.com/ratelab/ratelab/harness"},
		{"./redis_store", "github.com/ratelab/ratelab/harness"},
		// The Redis store exports the store alone: its lessons, their
		// charts and their claims live in beyond_one_host.
		{"./redis_store", "github.com/ratelab/ratelab/internal/barchart"},
		{"./redis_store", "github.com/ratelab/ratelab/internal/claim"},
	}
	for _, tt := range tests {
		out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		if slices.Contains(strings.Fields(string(out)), tt.mustNot) {
			t.Errorf("%s links %s", tt.pkg, tt.mustNot)
		}
	}
}

// layers orders the module's packages from the bottom up, by the folder
// they live in (the longest prefix that matches names a package's layer).
// A package may import its own layer and the layers below it, never one
// above: internal/ holds what the stores build on, internal/lab what
// drives whole stores (private servers, loads, benchmarks, the stores'
// shared tests). Test files may reach up — a store's tests use
// internal/lab/storetest — so only the packages' own imports are held.
var layers = [][]string{
	{"internal/barchart", "internal/childproc", "internal/claim", "internal/crosscheck", "internal/floor", "internal/freeport",
		"internal/hostport", "internal/poll", "internal/redact", "internal/seqchart", "internal/syncbuf", "internal/weave"},
	{"", "algorithm"}, // the contract, and the algorithms' pure steps
	{"broken_inmemory"},
	{"internal/sqlstore"},
	{"fixed_filestore", "redis_store", "mysql_store", "postgres_store", "httplimit"},
	{"internal/lab"},
	{"race_tests", "window_boundary", "database_lock", "beyond_one_host", "linearizability"},
	{"harness", "docs"},
	{"harness/cmd"},
}

// layerOf returns the layer of the package at rel, the path below the
// module, by its longest matching folder in layers; -1 if none matches.
func layerOf(rel string) int {
	best, bestLen := -1, -1
	for i, folders := range layers {
		for _, f := range folders {
			match := rel == f || f == "" || strings.HasPrefix(rel, f+"/")
			if match && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	return best
}

// TestImportsPointDown holds every package's imports to its layer and
// below.
func TestImportsPointDown(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	const module = "github.com/ratelab/ratelab"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		pkg := rel(f[0])
		from := layerOf(pkg)
		if from < 0 {
			t.Errorf("package %q has no layer: add its folder to layers", pkg)
			continue
		}
		for _, imp := range f[1:] {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := layerOf(rel(imp)); to > from {
				t.Errorf("%q (layer %d) imports %q (layer %d): imports point down", pkg, from, rel(imp), to)
			}
		}
	}
}
