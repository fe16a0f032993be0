package ratelab_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ratelab/ratelab/internal/corelines"
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
		{"./harness", "net/http"}, // the lesson's processes take hits over a pipe
		{"./harness/cmd/ratelab", "testing"},
		// The stores import the contract and the steps, never a lesson.
		{"./fixed_filestore", "github.com/ratelab/ratelab/harness"},
		{"./redis_store", "github.com/ratelab/ratelab/harness"},
		// The Redis store exports the store alone: its lessons, their
		// charts and their claims live in beyond_one_host.
		{"./redis_store", "github.com/ratelab/ratelab/internal/barchart"},
		{"./redis_store", "github.com/ratelab/ratelab/internal/claim"},
	}
	deps := depsOf(t)
	for _, tt := range tests {
		if slices.Contains(deps[tt.pkg], tt.mustNot) {
			t.Errorf("%s links %s", tt.pkg, tt.mustNot)
		}
	}
}

// layers orders the module's packages from the bottom up, by the folder
// they live in (the longest prefix that matches names a package's layer).
// A package may import its own layer and the layers below it, never one
// above. internal/ holds leaf helpers, which import nothing of the module
// but each other; the core of the lesson comes next (see core), then the
// execution models served over HTTP (http_host), the stores that need a
// server, lab/ — what drives whole stores: private
// servers, loads, benchmarks, the stores' shared tests — and the advanced
// lessons, which plug their stores into the harness (harness.Register).
// Test files may reach up — a store's tests use lab/storetest — so only
// the packages' own imports are held.
var layers = [][]string{
	{"internal"},
	{"", "algorithm"}, // the contract, and the algorithms' pure steps
	{"broken_inmemory", "httplimit"},
	{"fixed_filestore"},
	{"harness", "window_boundary"},
	{"http_host"}, // the harness's models served over HTTP: the demos, serve
	{"redis_store", "sql_store"},
	{"mysql_store", "postgres_store"},
	{"lab"},
	{"race_tests", "database_lock", "beyond_one_host", "linearizability"},
	{"harness/cmd", "docs"},
}

// advanced is what the core must never link: the stores that need a
// server, their drivers, the checker and the lab.
var advanced = []string{"github.com/redis/", "github.com/jackc/", "github.com/go-sql-driver/", "github.com/anishathalye/porcupine",
	module + "/lab/", module + "/redis_store", module + "/sql_store", module + "/mysql_store", module + "/postgres_store",
	module + "/linearizability", module + "/beyond_one_host", module + "/database_lock", module + "/race_tests"}

const module = corelines.Module

// TestTheCoreLinksNothingAdvanced holds the core of the lesson
// (corelines.Core) to the lesson: the advanced material depends on it,
// never the reverse.
func TestTheCoreLinksNothingAdvanced(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	deps := depsOf(t)
	for _, pkg := range corelines.Core {
		for _, dep := range deps["./"+pkg] {
			for _, a := range advanced {
				if strings.HasPrefix(dep, a) {
					t.Errorf("the core's %s links %s", pkg, dep)
				}
			}
		}
	}
}

// modDeps is every package of the module and what it links, from one
// go list: a go list per package would cost the suite seconds each.
var modDeps = sync.OnceValues(func() (map[string][]string, error) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Deps", "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	deps := map[string][]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p struct {
			ImportPath string
			Deps       []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		rel := "./" + strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		deps[strings.TrimSuffix(rel, "/")] = p.Deps
	}
	deps["./"] = deps["."]
	return deps, nil
})

// depsOf returns what each package of the module links, by its path as
// go list takes it ("." for the root, "./harness"), or fails t.
func depsOf(t *testing.T) map[string][]string {
	t.Helper()
	deps, err := modDeps()
	if err != nil {
		t.Fatal(err)
	}
	return deps
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
			to := layerOf(rel(imp))
			switch {
			case to > from:
				t.Errorf("%q (layer %d) imports %q (layer %d): imports point down", pkg, from, rel(imp), to)
			case from == 0 && to != 0:
				t.Errorf("%q imports %q: internal/ holds leaf helpers", pkg, rel(imp))
			}
		}
	}
}

// maxFileLines is how long a non-test Go file may be: every one is read
// in one sitting.
const maxFileLines = 350

// TestEveryFileReadsInOneSitting holds every non-test Go file of the
// module to maxFileLines.
func TestEveryFileReadsInOneSitting(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || d.Name() == "tmp" || d.Name() == "bin"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if n := bytes.Count(b, []byte("\n")); n > maxFileLines {
			t.Errorf("%s has %d lines, more than %d: split it where its parts are apart", path, n, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTheREADMECountsTheCore holds the README's figure for the core's
// lines, in both languages, to what corelines counts now.
func TestTheREADMECountsTheCore(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	pkgs, err := corelines.Count(".")
	if err != nil {
		t.Fatal(err)
	}
	want := corelines.Total(pkgs)
	internal := 0 // the pages say how many of internal/ the core links
	for _, p := range pkgs {
		if strings.HasPrefix(p.Path, "internal/") {
			internal++
		}
	}
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	for _, page := range []struct{ path, pattern, internal string }{
		{"README.md", `without flock\): (\d+) today`, "(" + words[min(internal, 9)] + " of `internal/`)"},
		{"docs/ja/README.md", `いまは (\d+) 行で`, "（`internal/` の " + strconv.Itoa(internal) + " つ）"},
	} {
		b, err := os.ReadFile(page.path)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(page.pattern).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no %q", page.path, page.pattern)
			continue
		}
		if got := string(m[1]); got != strconv.Itoa(want) {
			t.Errorf("%s says the core has %s lines; make corelines counts %d", page.path, got, want)
		}
		if !strings.Contains(string(b), page.internal) {
			t.Errorf("%s does not say %q: the core links %d packages of internal/", page.path, page.internal, internal)
		}
	}
}

// TestNoBuildOutputIsTracked keeps what a build makes out of git: no
// tracked file is an executable of any system, or larger than 1 MiB (a
// binary once sat at the root, 23.6 MB, from a go build run there).
func TestNoBuildOutputIsTracked(t *testing.T) {
	out, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	magic := [][]byte{[]byte("\x7fELF"), []byte("MZ"), {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 1<<20 {
			t.Errorf("%s is tracked and holds %d bytes: build output or data that belongs elsewhere", f, len(b))
		}
		for _, m := range magic {
			if bytes.HasPrefix(b, m) {
				t.Errorf("%s is tracked and is an executable: add it to .gitignore and git rm --cached it", f)
			}
		}
	}
}
