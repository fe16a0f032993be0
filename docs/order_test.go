package docs

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The course reads in an order where each chapter stands on those before
// it: a chapter comes after the chapters it builds on, and none motivates
// itself by one still to come ("the next chapter", "chapter 9").
func TestChaptersStandOnWhatCameBefore(t *testing.T) {
	order := pasteOrder(t, "..")
	at := func(page string) int {
		i := slices.Index(order, filepath.Join("docs", page))
		require.GreaterOrEqual(t, i, 0, "docs/README.md does not list %s", page)
		return i
	}
	for _, c := range []struct{ later, earlier, why string }{
		{"performance.md", "database-lock.md", "it measures the database stores"},
		{"performance.md", "beyond-one-host.md", "it measures the Redis store"},
		{"performance-redis.md", "beyond-one-host.md", "it measures the Redis store"},
		{"linearizability.md", "races-and-locks.md", "it checks the races that chapter shows"},
		{"beyond-one-host.md", "database-lock.md", "it names the database lock chapter's stores"},
	} {
		assert.Greater(t, at(c.later), at(c.earlier), "%s comes after %s: %s", c.later, c.earlier, c.why)
	}

	ahead := regexp.MustCompile(`(?i)\b(?:the\s+(?:next|following)\s+chapter|later\s+chapters?)\b|\bchapter\s+(\d+)\b`)
	for n, page := range order[1:] { // order[0] is the README
		b, err := os.ReadFile(filepath.Join("..", page))
		require.NoError(t, err)
		for _, m := range ahead.FindAllStringSubmatch(string(b), -1) {
			if m[1] != "" {
				if k, _ := strconv.Atoi(m[1]); k <= n {
					continue // chapter n+1 may name chapters 1 … n
				}
			}
			t.Errorf("%s (page %d of the reading order) points ahead: %q", page, n+1, m[0])
		}
	}
}

// The workshop's plan: its sections follow each other from minute 0 to
// minute 90, each heading states the minutes the plan gives it, and the
// timing table at the end gives each section the same minutes.
func TestWorkshopPlanAddsUp(t *testing.T) {
	b, err := os.ReadFile("workshop.md")
	require.NoError(t, err)
	page := string(b)
	rows := regexp.MustCompile(`(?m)^\| (\d+)–(\d+) \| (\d)\. `).FindAllStringSubmatch(page, -1)
	require.Len(t, rows, 7, "the plan's rows")
	end := 0
	for _, r := range rows {
		from, _ := strconv.Atoi(r[1])
		to, _ := strconv.Atoi(r[2])
		assert.Equal(t, end, from, "section %s starts where the one before ends", r[3])
		end = to
		heading := regexp.MustCompile(`(?m)^## ` + r[3] + `\. .*\((\d+) min\)$`).FindStringSubmatch(page)
		require.NotNil(t, heading, "section %s's heading states its minutes", r[3])
		assert.Equal(t, strconv.Itoa(to-from), heading[1], "section %s's heading", r[3])
		timed := regexp.MustCompile(`(?m)^\| ` + r[3] + ` \| (\d+) \|`).FindStringSubmatch(page)
		require.NotNil(t, timed, "the timing table has section %s", r[3])
		assert.Equal(t, strconv.Itoa(to-from), timed[1], "section %s's timed minutes", r[3])
	}
	assert.Equal(t, 90, end, "the plan's last minute")
}

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
