package docs

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The README names the package of every folder it lists, and it is the
// package that folder's code declares; every top-level folder whose name
// has an underscore, and so differs from its package's, is among them.
func TestREADMENamesEachFoldersPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	require.NoError(t, err)
	named := map[string]string{}
	for _, m := range regexp.MustCompile("\\[`([a-z_]+)/`\\]\\([^)]*\\) \\(package `([a-z]+)`\\)").FindAllStringSubmatch(string(b), -1) {
		named[m[1]] = m[2]
	}
	require.NotEmpty(t, named, "the README names no folder's package")
	for dir, pkg := range named {
		assert.Equal(t, packageOf(t, filepath.Join("..", dir)), pkg, "the package the README names for %s/", dir)
	}

	entries, err := os.ReadDir("..")
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && strings.Contains(e.Name(), "_") && packageOf(t, filepath.Join("..", e.Name())) != "" {
			assert.Contains(t, named, e.Name(), "the README does not say which package folder %s/ holds", e.Name())
		}
	}
}

// packageOf returns the package a folder's non-test Go files declare, or
// "" if it has none.
func packageOf(t *testing.T, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.PackageClauseOnly)
		require.NoError(t, err)
		return ast.Name.Name
	}
	return ""
}
