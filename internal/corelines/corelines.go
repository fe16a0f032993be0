// Package corelines counts the core of the lesson: the packages a reader
// reads to follow it in one sitting — the contract, the broken map store,
// the flock file store, the helper-process harness, the boundary
// measurement — and every package of the module they import, their
// non-test Go files, every line (comments and package documentation
// included).
package corelines

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Module is the module's path.
const Module = "github.com/ratelab/ratelab"

// Core are the core's packages, as paths below the module ("" is the
// root package).
var Core = []string{"", "algorithm", "broken_inmemory", "fixed_filestore", "harness", "window_boundary"}

// Target is the line count the core is meant to stay within.
const Target = 1500

// Package is one package of the core and its non-test lines.
type Package struct {
	Path  string // below the module; "" is the root package
	Lines int
}

// Count returns every package of the module that the core links, with
// its lines, largest first, run from root (the module's directory).
func Count(root string) ([]Package, error) {
	args := []string{"list", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles"}
	for _, p := range Core {
		args = append(args, "./"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("corelines: go list: %w", err)
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Dir   string
			GoFiles, CgoFiles []string
		}
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if p.ImportPath != Module && !strings.HasPrefix(p.ImportPath, Module+"/") {
			continue
		}
		n := 0
		for _, f := range slices.Concat(p.GoFiles, p.CgoFiles) {
			c, err := lines(filepath.Join(p.Dir, f))
			if err != nil {
				return nil, err
			}
			n += c
		}
		pkgs = append(pkgs, Package{strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, Module), "/"), n})
	}
	slices.SortFunc(pkgs, func(a, b Package) int { return b.Lines - a.Lines })
	return pkgs, nil
}

// Total is the lines of pkgs.
func Total(pkgs []Package) (n int) {
	for _, p := range pkgs {
		n += p.Lines
	}
	return n
}

// Print writes pkgs and their total, beside Target.
func Print(w io.Writer, pkgs []Package) {
	for _, p := range pkgs {
		fmt.Fprintf(w, "%6d  %s\n", p.Lines, name(p.Path))
	}
	fmt.Fprintf(w, "%6d  the core's non-test lines (target: %d)\n", Total(pkgs), Target)
}

func name(path string) string {
	if path == "" {
		return "ratelab (the root package)"
	}
	return path
}

// lines counts the lines of the file at path (this build's files only:
// go list names those of the running system).
func lines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}
