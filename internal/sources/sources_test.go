package sources

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Read reads every file below the root but those of the skipped folders,
// at any depth, and a root-level file as well as a nested one.
func TestFilesSkipsWhatHoldsNoSource(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a.go", "sub/b.go", "sub/tmp/c.go", "tmp/d", "bin/e", ".git/HEAD", "docs/f.md"} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := files(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i], _ = filepath.Rel(root, got[i])
	}
	slices.Sort(got)
	if want := []string{"a.go", "docs/f.md", "sub/b.go"}; !slices.Equal(got, want) {
		t.Errorf("files = %q, want %q", got, want)
	}
	if err := Read(root); err != nil {
		t.Errorf("Read: %v", err)
	}
	if err := Read(filepath.Join(root, "missing")); err == nil {
		t.Error("Read of a missing root: no error")
	}
}
