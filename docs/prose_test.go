package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wovenPages returns the README and the chapters woven from docs/src,
// relative to the repository root: the pages whose prose is written by
// hand (docs/performance*.md are written by make bench).
func wovenPages(t *testing.T) []string {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join("..", "docs", "src", "*.md"))
	require.NoError(t, err)
	pages := []string{"README.md"}
	for _, s := range srcs {
		pages = append(pages, filepath.Join("docs", filepath.Base(s)))
	}
	return pages
}

// prose returns a page without its fenced blocks (quoted code and real
// output) and its generated-file header, its lines joined by single
// spaces so that a phrase broken across lines reads as one.
func prose(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", page))
	require.NoError(t, err)
	var kept []string
	in := false
	for line := range strings.Lines(string(b)) {
		switch {
		case strings.HasPrefix(line, "```"):
			in = !in
		case !in && !strings.HasPrefix(line, "<!-- Generated"):
			kept = append(kept, line)
		}
	}
	return strings.Join(strings.Fields(strings.Join(kept, "")), " ")
}

// The two articles ratelab comes from are named, with title and date, in
// the README's Sources section, and every page that speaks of "the
// original" or "the lock article" links there.
func TestSourcesAreNamed(t *testing.T) {
	sourcesListed(t, "README.md", "## Sources")
	mentions := regexp.MustCompile(`\b[Oo]riginal\b|\block article\b`)
	for _, page := range wovenPages(t) {
		text := prose(t, page)
		for _, vague := range []string{"reference article", "PHP original"} {
			assert.NotContains(t, text, vague, "%s: name the article (the README's Sources say which)", page)
		}
		link := "](../README.md#sources)"
		if page == "README.md" {
			link = "](#sources)"
		}
		if mentions.MatchString(text) {
			assert.Contains(t, text, link, "%s speaks of %q without linking the sources", page, mentions.FindString(text))
		}
	}
}

// sourcesListed checks that page's section heading names both articles,
// with their titles and the original's date.
func sourcesListed(t *testing.T, page, heading string) {
	t.Helper()
	text := prose(t, page)
	for _, want := range []string{
		heading,
		"「共有レンタルサーバーでInMemoryレート制限が発動しない｜PHP CGI・flock」",
		"2026-07-16",
		"「PHPでキャッシュ競合を防ぐロック機能の効果的な実装方法」",
	} {
		assert.Contains(t, text, want, "%s: %s", page, heading)
	}
}

// jaPages returns the Japanese pages, relative to the repository root.
func jaPages(t *testing.T) []string {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join("..", "docs", "src", "ja", "*.md"))
	require.NoError(t, err)
	var pages []string
	for _, s := range srcs {
		pages = append(pages, filepath.Join("docs", "ja", filepath.Base(s)))
	}
	return pages
}

// The Japanese pages name the articles as the English ones do: the
// README's 出典 section gives titles and dates, and every page that speaks
// of 元記事 (the original) or ロックの記事 (the lock article) links there.
func TestJapaneseSourcesAreNamed(t *testing.T) {
	sourcesListed(t, "docs/ja/README.md", "## 出典")
	for _, page := range jaPages(t) {
		text := prose(t, page)
		link := "](README.md#出典)"
		if page == filepath.Join("docs", "ja", "README.md") {
			link = "](#出典)"
		}
		if strings.Contains(text, "元記事") || strings.Contains(text, "ロックの記事") {
			assert.Contains(t, text, link, "%s speaks of the articles without linking 出典", page)
		}
	}
}

// The course describes the code as it is: no prose tells what the code
// used to do.
func TestProseDescribesTheCodeAsItIs(t *testing.T) {
	history := regexp.MustCompile(`\bused to\b|\bonce did\b|\bas the store once\b|\bIt was [0-9.]+ ×|; now \[|\bBefore that check\b`)
	for _, page := range wovenPages(t) {
		for _, m := range history.FindAllString(prose(t, page), -1) {
			t.Errorf("%s: %q narrates history; say what the code does now", page, m)
		}
	}
}

// declared indexes the names the Go files of the repository declare.
type declared struct {
	pkgs    map[string]map[string]bool // package name → its package-level names
	members map[string]map[string]bool // type name → its fields and methods, in any package
	fields  map[string]bool            // every field and method name
	any     map[string]bool            // every declared name
	inFile  map[string]map[string]bool // file, slash path from the root → its top-level names and methods
	imports map[string]bool            // every import path
	dirs    map[string]string          // package name → directory, of the imported packages
}

func add(m map[string]map[string]bool, k, v string) {
	if m[k] == nil {
		m[k] = map[string]bool{}
	}
	m[k][v] = true
}

// indexRepo parses every Go file under root.
func indexRepo(t *testing.T, root string) *declared {
	t.Helper()
	d := &declared{pkgs: map[string]map[string]bool{}, members: map[string]map[string]bool{},
		fields: map[string]bool{}, any: map[string]bool{}, inFile: map[string]map[string]bool{},
		imports: map[string]bool{}, dirs: map[string]string{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "tmp") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		d.file(filepath.ToSlash(rel), f)
		return nil
	})
	require.NoError(t, err)
	paths := []string{"-e", "-f", "{{.Name}} {{.Dir}}"}
	for p := range d.imports {
		paths = append(paths, p)
	}
	list := exec.Command("go", append([]string{"list"}, paths...)...)
	list.Dir = root
	out, err := list.Output()
	require.NoError(t, err)
	for line := range strings.Lines(string(out)) {
		if name, dir, ok := strings.Cut(strings.TrimSpace(line), " "); ok && dir != "" {
			d.dirs[name] = dir
		}
	}
	return d
}

// file records the names f declares.
func (d *declared) file(rel string, f *ast.File) {
	pkg := strings.TrimSuffix(f.Name.Name, "_test")
	for _, imp := range f.Imports {
		if p := strings.Trim(imp.Path.Value, `"`); !strings.HasPrefix(p, "github.com/ratelab/") {
			d.imports[p] = true
		}
	}
	for _, name := range topLevel(f) {
		add(d.pkgs, pkg, name)
		add(d.inFile, rel, name)
		d.any[name] = true
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv != nil {
				add(d.inFile, rel, decl.Name.Name)
				d.member(recvType(decl.Recv.List[0].Type), decl.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				if ts, ok := spec.(*ast.TypeSpec); ok {
					ast.Inspect(ts.Type, func(n ast.Node) bool {
						if fl, ok := n.(*ast.FieldList); ok {
							for _, fd := range fl.List {
								for _, name := range fd.Names {
									d.member(ts.Name.Name, name.Name)
								}
							}
						}
						return true
					})
				}
			}
		}
	}
}

// member records a field or method of the type named typ.
func (d *declared) member(typ, name string) {
	add(d.members, typ, name)
	d.fields[name], d.any[name] = true, true
}

// recvType is the name of a method's receiver type.
func recvType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// importedDeclares reports whether the package named pkg that the
// repository imports (os, redis for go-redis) declares name at its top
// level; isPkg is false if the repository imports no package of that name.
func (d *declared) importedDeclares(pkg, name string) (declares, isPkg bool) {
	dir, ok := d.dirs[pkg]
	if !ok {
		return false, false
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err == nil && slices.Contains(topLevel(af), name) {
			return true, true
		}
	}
	return false, true
}

// topLevel returns the names f declares at package level: functions,
// types, variables and constants.
func topLevel(f *ast.File) []string {
	var names []string
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				names = append(names, decl.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.TypeSpec:
					names = append(names, spec.Name.Name)
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// notGo are the mixed-case names the course quotes that are not Go: HTTP
// fields, the original's PHP class, a Python constant, a driver's DSN
// parameter.
var notGo = map[string]bool{"RateLimit": true, "Forwarded": true, "InMemoryRateLimitStorage": true, "False": true, "multiStatements": true,
	"None": true, "ValueError": true} // Python, in fail-policy.md's django-ratelimit

var (
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	selector   = regexp.MustCompile(`^([A-Za-z_]\w*)\.([A-Za-z_]\w*)$`)
	identifier = regexp.MustCompile(`^[A-Za-z]\w*$`)
	goLink     = regexp.MustCompile("\\[(`?)([A-Za-z]\\w*)`?\\]\\(([^)#\\s]+\\.go)(#[^)]*)?\\)")
	testName   = regexp.MustCompile(`^(Test|Benchmark|Fuzz|Example)[A-Z_]`)
)

// unknownNames returns the code names in a page's prose that no Go file
// declares: a `pkg.Name` its package (of the repository or the standard
// library) lacks, a `Type.Member` or `s.member` no type has, a mixed-case
// `name` nothing declares, a [TestName](file.go) or [`name`](file.go)
// link to a file that does not declare it.
func (d *declared) unknownNames(page, text string) []string {
	var bad []string
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		if !d.known(m[1]) {
			bad = append(bad, "`"+m[1]+"`")
		}
	}
	for _, m := range goLink.FindAllStringSubmatch(text, -1) {
		quoted, name, target := m[1] != "", m[2], m[3]
		if !(quoted && goName(name)) && !testName.MatchString(name) {
			continue // a link's words, [MariaDB](…), or a package, [`algorithm`](…)
		}
		file := path.Clean(path.Join(path.Dir(filepath.ToSlash(page)), target))
		if !d.inFile[file][name] {
			bad = append(bad, "["+m[1]+name+m[1]+"]("+target+")")
		}
	}
	return bad
}

// known reports whether the code span s names something declared, or is
// not a name this test can judge.
func (d *declared) known(s string) bool {
	if m := selector.FindStringSubmatch(s); m != nil {
		x, y := m[1], m[2]
		switch {
		case d.pkgs[x] != nil:
			return d.pkgs[x][y]
		case d.members[x] != nil && unicode.IsUpper(rune(x[0])):
			return d.members[x][y]
		case len(x) == 1 && unicode.IsLower(rune(x[0])):
			return d.fields[y]
		}
		if declares, isPkg := d.importedDeclares(x, y); isPkg {
			return declares
		}
		return true // a file name, a configuration key, a SQL table
	}
	return !goName(s) || d.any[s]
}

// goName reports whether s reads as a Go name: mixed case, no
// underscore, and not one of the names the course quotes from elsewhere.
func goName(s string) bool {
	return identifier.MatchString(s) && !strings.Contains(s, "_") && !notGo[s] &&
		strings.ToUpper(s) != s && strings.ToLower(s) != s
}

// Every code name in the prose of the README and the chapters is one the
// repository, or a package it imports (`os.SameFile`), declares.
func TestProseNamesAreReal(t *testing.T) {
	d := indexRepo(t, "..")
	pages := append(wovenPages(t), "docs/performance.md", "docs/performance-redis.md")
	for _, page := range append(pages, jaPages(t)...) {
		for _, name := range d.unknownNames(page, prose(t, page)) {
			t.Errorf("%s names %s, which no Go file declares", page, name)
		}
	}
}

// The check catches a renamed name in each of its forms, and passes the
// same names as the code has them.
func TestProseNamesCatchARename(t *testing.T) {
	d := indexRepo(t, "..")
	real := "`s.states` `checkHeld` `os.SameFile` `ratelab.ErrUnavailable` `Decision.Cause` [TestStore](../postgres_store/store_test.go)"
	assert.Empty(t, d.unknownNames("docs/x.md", real))
	renamed := "`s.windows` `checkHeld2` `os.SameFiles` `ratelab.State` `Decision.Counted` [TestStore](../lab/storetest/database.go)"
	assert.Equal(t, []string{"`s.windows`", "`checkHeld2`", "`os.SameFiles`", "`ratelab.State`", "`Decision.Counted`", "[TestStore](../lab/storetest/database.go)"},
		d.unknownNames("docs/x.md", renamed))
	_, err := os.Stat(filepath.Join("..", "lab", "storetest", "database.go"))
	require.NoError(t, err, "the file the renamed link points at exists: only the name is wrong")
}
