// Package docs holds the generated documentation; its test keeps it true.
package docs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ratelab/ratelab/internal/weave"
)

// TestDocsAreFresh weaves every chapter again — code from its source
// regions, output from running the commands — and fails if the committed
// chapter differs: a code region changed or vanished, or a command's
// output changed.
func TestDocsAreFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demos; skipped with -short")
	}
	root := ".."
	bin := t.TempDir()
	if err := weave.BuildBinaries(root, bin); err != nil {
		t.Fatal(err)
	}
	docs, err := weave.All(root, bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/src/*.md found")
	}
	for _, d := range docs {
		got, err := os.ReadFile(filepath.Join(root, d.Dst))
		if err != nil {
			t.Errorf("%s: %v (run make docs)", d.Dst, err)
			continue
		}
		if !bytes.Equal(got, d.Want) {
			t.Errorf("%s is stale: run make docs\n%s", d.Dst, firstDiff(string(got), string(d.Want)))
		}
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "first difference at line " + strconv.Itoa(i+1) + ":\n  committed: " + gl + "\n  woven:     " + wl
		}
	}
	return ""
}

// TestLinksExist checks every relative link in the README and the docs.
func TestLinksExist(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("..", "README.md"))
	for _, f := range files {
		rel, _ := filepath.Rel("..", f)
		broken, err := weave.BrokenLinks("..", rel)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range broken {
			t.Errorf("%s links to %s, which does not exist", rel, b)
		}
	}
}

// Every generated chapter has a source, so nothing in docs/ is edited by hand.
func TestEveryChapterHasASource(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	for _, f := range files {
		if _, err := os.Stat(filepath.Join("..", "docs", "src", filepath.Base(f))); err != nil {
			t.Errorf("%s has no source in docs/src", f)
		}
	}
}
