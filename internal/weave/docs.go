package weave

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// Doc is one generated document: its source and what weaving it gives.
type Doc struct {
	Src, Dst string // relative to the repository root
	Want     []byte
}

// BuildBinaries builds the commands the docs run into dir.
func BuildBinaries(root, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./harness/cmd/ratelab")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("weave: build: %v: %s", err, out)
	}
	return nil
}

// RootREADME is the source of the repository's README.md.
const RootREADME = "docs/src/root/README.md"

// All weaves every docs/src/*.md under root into docs/, and RootREADME
// into README.md, running commands from binDir, each document in a fresh
// scratch directory under tmp.
func All(root, binDir, tmp string) ([]Doc, error) {
	srcs, err := filepath.Glob(filepath.Join(root, "docs", "src", "*.md"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, RootREADME)); err == nil {
		srcs = append(srcs, filepath.Join(root, RootREADME))
	}
	var docs []Doc
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		scratch, err := os.MkdirTemp(tmp, "doc-")
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(root, src)
		opts := Options{Root: root, BinDir: binDir, Scratch: scratch}
		dst := filepath.Join("docs", filepath.Base(src))
		if filepath.ToSlash(rel) == RootREADME {
			opts.LinkPrefix, dst = "./", "README.md"
		}
		out, err := Weave(filepath.ToSlash(rel), b, opts)
		if err != nil {
			return nil, err
		}
		docs = append(docs, Doc{Src: rel, Dst: dst, Want: out})
	}
	return docs, nil
}

var link = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// BrokenLinks returns the relative links in the Markdown file at path
// (relative to root) whose targets do not exist.
func BrokenLinks(root, path string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var broken []string
	for _, m := range link.FindAllStringSubmatch(string(b), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, filepath.Dir(path), target)); err != nil {
			broken = append(broken, target)
		}
	}
	return broken, nil
}
