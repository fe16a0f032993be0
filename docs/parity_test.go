package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jaOnly are the Japanese pages that have no English twin, and why.
var jaOnly = map[string]string{
	"glossary.md":    "用語集: each term, its English chapter's term and its Go identifier",
	"performance.md": "a guide to docs/performance*.md, which make bench writes in English",
}

// source is one source page as the parity test reads it: where it is
// woven to (links resolve from there) and its text.
type source struct {
	path, wovenDir, text string
}

// readSource reads a source under the repository root.
func readSource(t *testing.T, root, rel, wovenDir string) source {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	require.NoError(t, err)
	return source{path: rel, wovenDir: wovenDir, text: string(b)}
}

// twin pairs a Japanese source with the English sources it translates,
// in order.
type twin struct {
	ja source
	en []source
}

// twins pairs every English source with its Japanese twin: the root
// README and the course index together make docs/ja/README.md.
func twins(t *testing.T, root string) []twin {
	t.Helper()
	ja := func(name string) source { return readSource(t, root, "docs/src/ja/"+name, "docs/ja") }
	pairs := []twin{{ja: ja("README.md"), en: []source{
		readSource(t, root, "docs/src/root/README.md", "."),
		readSource(t, root, "docs/src/README.md", "docs"),
	}}}
	srcs, err := filepath.Glob(filepath.Join(root, "docs", "src", "*.md"))
	require.NoError(t, err)
	for _, s := range srcs {
		name := filepath.Base(s)
		if name == "README.md" {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, "docs", "src", "ja", name)); err != nil {
			t.Errorf("docs/src/%s has no Japanese twin: write docs/src/ja/%s", name, name)
			continue
		}
		pairs = append(pairs, twin{ja: ja(name), en: []source{readSource(t, root, "docs/src/"+name, "docs")}})
	}
	return pairs
}

// item is one thing a page must share with its twin: a command, a quoted
// region, a figure, a link to code, or a hand-written code block.
type item struct {
	kind, text string
	page       string
	line       int
}

func (it item) String() string {
	return fmt.Sprintf("%s %q (%s:%d)", it.kind, it.text, it.page, it.line)
}

var (
	target = regexp.MustCompile(`\[([^\[\]]*)\]\(([^)#\s]+)(#[^)]*)?\)`)
	// ident is a link text that names code — a test, a function, a
	// package — the same in both languages.
	ident      = regexp.MustCompile("^`?[A-Za-z_][A-Za-z0-9_.]*`?$")
	shComment  = regexp.MustCompile(`(?m)(^|\s)#.*$`)
	goComment  = regexp.MustCompile(`(?m)(^|\s)//.*$`)
	trailingWS = regexp.MustCompile(`(?m)[ \t]+$`)
	blockKinds = []string{"command", "region", "figure", "block"}
)

// inventory lists a source's items: %run commands, %include regions,
// figures and links to code in the order they appear, and its code blocks
// other than text ones (diagrams and shown output may be translated) with
// their comments removed: the code is the same, what it says about itself
// may be in either language.
func inventory(s source) []item {
	var items []item
	var block *item
	var lang string
	for n, line := range strings.Split(s.text, "\n") {
		add := func(kind, text string) {
			items = append(items, item{kind: kind, text: text, page: s.path, line: n + 1})
		}
		switch {
		case block != nil && strings.TrimSpace(line) == "```":
			if lang != "text" {
				block.text = uncomment(lang, block.text)
				items = append(items, *block)
			}
			block = nil
		case block != nil:
			block.text += line + "\n"
		case strings.HasPrefix(line, "```"):
			lang = strings.TrimSpace(strings.TrimPrefix(line, "```"))
			block = &item{kind: "block", page: s.path, line: n + 1}
		case strings.HasPrefix(line, "%run "):
			add("command", strings.TrimPrefix(line, "%run "))
		case strings.HasPrefix(line, "%include "):
			add("region", strings.Join(strings.Fields(strings.TrimPrefix(line, "%include ")), " "))
		default:
			for _, m := range target.FindAllStringSubmatch(line, -1) {
				kind, to := linkKind(s.wovenDir, m[2])
				if kind == "link" && ident.MatchString(m[1]) {
					to = m[1] + " → " + to // the name as well as the file
				}
				if kind != "" {
					add(kind, to)
				}
			}
		}
	}
	return items
}

// linkKind resolves a link of a page woven into dir: a figure or code,
// by its path from the repository root; "" for chapters and the web.
func linkKind(dir, to string) (string, string) {
	if strings.Contains(to, "://") || strings.HasPrefix(to, "mailto:") || strings.HasSuffix(to, ".md") {
		return "", ""
	}
	p := filepath.ToSlash(filepath.Join(dir, to))
	if strings.HasPrefix(p, "docs/figures/") {
		return "figure", p
	}
	return "link", p
}

func uncomment(lang, body string) string {
	re := shComment
	if lang == "go" {
		re = goComment
	}
	return strings.TrimSpace(trailingWS.ReplaceAllString(re.ReplaceAllString(body, ""), ""))
}

// parity returns what the Japanese page lacks, has in excess or has in
// another order than its English twin, one precise line each.
func parity(p twin) []string {
	var en []item
	for _, s := range p.en {
		en = append(en, inventory(s)...)
	}
	ja := inventory(p.ja)
	var problems []string
	for _, kind := range blockKinds {
		problems = append(problems, inOrder(p.ja.path, of(en, kind), of(ja, kind))...)
	}
	problems = append(problems, sameSet(p.ja.path, of(en, "link"), of(ja, "link"))...)
	return problems
}

func of(items []item, kind string) []item {
	var out []item
	for _, it := range items {
		if it.kind == kind {
			out = append(out, it)
		}
	}
	return out
}

// inOrder compares two sequences by their longest common subsequence: an
// English item outside it is missing from the Japanese page (or out of
// order, if the Japanese page has it elsewhere), a Japanese one outside it
// is not in the English page.
func inOrder(page string, en, ja []item) []string {
	keep := lcs(en, ja)
	var missing, extra []item
	for i, it := range en {
		if !keep.en[i] {
			missing = append(missing, it)
		}
	}
	for j, it := range ja {
		if !keep.ja[j] {
			extra = append(extra, it)
		}
	}
	var problems []string
	where := func(m item) string {
		i := slices.Index(en, m)
		for k := i - 1; k >= 0; k-- {
			if keep.at[k] >= 0 {
				return fmt.Sprintf("; the Japanese page has that at line %d", ja[keep.at[k]].line)
			}
		}
		return ""
	}
	for _, m := range missing {
		at := slices.IndexFunc(extra, func(x item) bool { return x.text == m.text })
		if at >= 0 {
			problems = append(problems, fmt.Sprintf("%s: out of order: %s is at line %d; the English page has it after %s", page, m.kind+" "+quote(m.text), extra[at].line, before(en, m)))
			extra = slices.Delete(extra, at, at+1)
			continue
		}
		problems = append(problems, fmt.Sprintf("%s: missing %s: %s:%d has it, after %s%s", page, m.kind+" "+quote(m.text), m.page, m.line, before(en, m), where(m)))
	}
	for _, x := range extra {
		problems = append(problems, fmt.Sprintf("%s:%d: %s is not in the English page", page, x.line, x.kind+" "+quote(x.text)))
	}
	return problems
}

// before names the item that comes before it in its sequence.
func before(seq []item, it item) string {
	i := slices.IndexFunc(seq, func(x item) bool { return x == it })
	if i <= 0 {
		return "nothing (it is the first " + it.kind + ")"
	}
	return quote(seq[i-1].text) + fmt.Sprintf(" (%s:%d)", seq[i-1].page, seq[i-1].line)
}

func quote(s string) string {
	if len(s) > 90 {
		s = s[:87] + "…"
	}
	return "`" + strings.ReplaceAll(s, "\n", "⏎") + "`"
}

// kept marks the items of the common subsequence, and where each kept
// English item is in the Japanese sequence.
type kept struct {
	en, ja []bool
	at     []int // English index → Japanese index, -1 if not kept
}

func lcs(a, b []item) kept {
	n, m := len(a), len(b)
	l := make([][]int, n+1)
	for i := range l {
		l[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i].text == b[j].text {
				l[i][j] = l[i+1][j+1] + 1
			} else {
				l[i][j] = max(l[i+1][j], l[i][j+1])
			}
		}
	}
	k := kept{make([]bool, n), make([]bool, m), slices.Repeat([]int{-1}, n)}
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i].text == b[j].text:
			k.en[i], k.ja[j], k.at[i] = true, true, j
			i, j = i+1, j+1
		case l[i+1][j] >= l[i][j+1]:
			i++
		default:
			j++
		}
	}
	return k
}

// sameSet compares links to code, whose order a translation may change.
func sameSet(page string, en, ja []item) []string {
	// A link by name needs the name; a link by prose, any link to its file.
	has := func(items []item, text string) bool {
		return slices.ContainsFunc(items, func(x item) bool {
			_, file, named := strings.Cut(x.text, " → ")
			return x.text == text || named && file == text
		})
	}
	var problems []string
	for _, e := range en {
		if !has(ja, e.text) {
			problems = append(problems, fmt.Sprintf("%s: missing link to %s: %s:%d has it", page, e.text, e.page, e.line))
			ja = append(ja, e) // once per target
		}
	}
	for _, j := range ja {
		if !has(en, j.text) {
			problems = append(problems, fmt.Sprintf("%s:%d: link to %s is not in the English page", page, j.line, j.text))
			en = append(en, j)
		}
	}
	return problems
}

// Each Japanese page has the same `$` commands in the same order, the
// same quoted regions and figures in the same order, the same code blocks
// and the same links to code as its English twin; and every Japanese page
// has a twin or says why not.
func TestJapanesePagesMatchTheirEnglishTwins(t *testing.T) {
	root := ".."
	for _, p := range twins(t, root) {
		for _, problem := range parity(p) {
			t.Error(problem)
		}
	}
	jas, err := filepath.Glob(filepath.Join(root, "docs", "src", "ja", "*.md"))
	require.NoError(t, err)
	for _, j := range jas {
		name := filepath.Base(j)
		_, err := os.Stat(filepath.Join(root, "docs", "src", name))
		if err != nil && name != "README.md" && jaOnly[name] == "" {
			t.Errorf("docs/src/ja/%s has no English twin in docs/src and is not one of the Japanese-only pages (jaOnly)", name)
		}
	}
	for name := range jaOnly {
		_, err := os.Stat(filepath.Join(root, "docs", "src", "ja", name))
		assert.NoError(t, err, "the Japanese-only page %s", name)
	}
}

// The parity check catches an English page that gains a command, a region
// moved, a figure dropped and a link to code the Japanese page lacks — by
// its name, when the text names code, not only by its file; a link whose
// text is prose ("its tests") counts by its file, which a translation
// renames.
func TestParityCatchesADrift(t *testing.T) {
	en := source{path: "docs/src/x.md", wovenDir: "docs", text: "# X\n%run a\n%include f.go r1\n%include f.go r2\n![c](figures/p.svg)\n[T](../x/x_test.go)\n%run b\n```sh\nls # list\n```\n"}
	ja := source{path: "docs/src/ja/x.md", wovenDir: "docs/ja", text: "# X\n%run a\n%include f.go r1\n%include f.go r2\n![図](../figures/p.svg)\n[T](../../x/x_test.go)\n%run b\n```sh\nls # 一覧\n```\n"}
	assert.Empty(t, parity(twin{ja: ja, en: []source{en}}), "a faithful twin, its comments translated")

	drifted := en
	drifted.text = strings.Replace(en.text, "%run b\n", "%run b\n%run c\n", 1)
	drifted.text = strings.Replace(drifted.text, "%include f.go r1\n%include f.go r2\n", "%include f.go r2\n%include f.go r1\n", 1)
	drifted.text = strings.Replace(drifted.text, "[T](../x/x_test.go)", "[T](../x/x_test.go) [U](../y/y.go) [V](../x/x_test.go) [its tests](../x/x_test.go)", 1)
	drifted.text = strings.Replace(drifted.text, "ls # list", "ls -l # list", 1)
	assert.Equal(t, []string{
		"docs/src/ja/x.md: missing command `c`: docs/src/x.md:8 has it, after `b` (docs/src/x.md:7); the Japanese page has that at line 7",
		"docs/src/ja/x.md: out of order: region `f.go r2` is at line 4; the English page has it after nothing (it is the first region)",
		"docs/src/ja/x.md: missing block `ls -l`: docs/src/x.md:9 has it, after nothing (it is the first block)",
		"docs/src/ja/x.md:8: block `ls` is not in the English page",
		"docs/src/ja/x.md: missing link to U → y/y.go: docs/src/x.md:6 has it",
		"docs/src/ja/x.md: missing link to V → x/x_test.go: docs/src/x.md:6 has it", // another name, the same file
	}, parity(twin{ja: ja, en: []source{drifted}}))
}
