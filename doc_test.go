package ratelab_test

import (
	"go/ast"
	"go/build"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var marker = regexp.MustCompile(`(?m)^![+-]\w+\s*$`)

// go doc of every exported identifier starts with the identifier's name,
// and no region marker of the doc weaver (// !+name) sits inside a doc
// comment, where go doc would print it.
func TestDocCommentsStartWithTheName(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// tmp/ and bin/ hold what runs make, not sources; reading them,
		// which the docs' tests change as they run beside this one, kept
		// go test from reusing this package's result.
		if d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "tmp" || d.Name() == "bin" || path == filepath.Join("bench", "peers")) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			return nil
		}
		fset := token.NewFileSet()
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		var files []*ast.File
		for _, e := range entries {
			name := e.Name()
			if ok, _ := build.Default.MatchFile(path, name); !ok || strings.HasSuffix(name, "_test.go") {
				continue // this platform's files only, and no tests
			}
			f, err := parser.ParseFile(fset, filepath.Join(path, name), nil, parser.ParseComments)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
		if len(files) == 0 || files[0].Name.Name == "main" {
			return nil
		}
		dp, err := doc.NewFromFiles(fset, files, path)
		if err != nil {
			return err
		}
		check := func(name, text string) {
			if text == "" {
				t.Errorf("%s: %s has no doc comment", path, name)
				return
			}
			if marker.MatchString(text) {
				t.Errorf("%s: %s's doc comment holds a region marker", path, name)
			}
			checked++
			first := strings.Fields(text)[0]
			if first != name {
				t.Errorf("%s: %s's doc comment starts with %q", path, name, first)
			}
		}
		for _, f := range dp.Funcs {
			check(f.Name, f.Doc)
		}
		for _, ty := range dp.Types {
			check(ty.Name, ty.Doc)
			for _, f := range append(ty.Funcs, ty.Methods...) {
				if ast.IsExported(f.Name) {
					check(f.Name, f.Doc)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d doc comments: the walk missed the packages", checked)
	}
}
