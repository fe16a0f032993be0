package docs

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// glossaryPage is the Japanese glossary; avoidHeading its section of the
// variants no page uses, a table whose first cell lists them (split at
// 、) and whose second names the glossary's term to use instead.
const (
	glossaryPage = "docs/src/ja/glossary.md"
	avoidHeading = "## 使わない言い方"
)

// A term is what a row of the glossary's other tables lists in its first
// cell: each name split at 、 or ／, its explanations in parentheses left
// out. A page may space it otherwise: "InMemory（インメモリ）ストア" is
// used as "InMemory ストア".
var (
	explained = regexp.MustCompile(`（[^）]*）|\([^)]*\)`)
	spaces    = regexp.MustCompile(`\s+`)
)

// entry is a term of the glossary, or a variant to avoid and the term to
// use instead, at the glossary's line.
type entry struct {
	text, use string
	line      int
}

// readGlossary lists the glossary's terms and its variants to avoid, in
// its order; a table's first row, its header, is neither.
func readGlossary(text string) (terms, avoid []entry) {
	section, header := "", true
	for n, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section, header = strings.TrimSpace(line), true
		case !strings.HasPrefix(line, "|"):
			header = true
		case header || separator.MatchString(line):
			header = false
		case section == avoidHeading:
			c := cells(line)
			for _, v := range strings.Split(c[0], "、") {
				avoid = append(avoid, entry{text: strings.TrimSpace(v), use: c[1], line: n + 1})
			}
		default:
			for _, t := range strings.FieldsFunc(explained.ReplaceAllString(cells(line)[0], ""), func(r rune) bool { return r == '、' || r == '／' }) {
				terms = append(terms, entry{text: strings.TrimSpace(t), line: n + 1})
			}
		}
	}
	return terms, avoid
}

// glossaryProblems returns each term no page uses, each variant a page
// uses, and each variant whose replacement is not a term; pages maps each
// Japanese page but the glossary to its text.
func glossaryProblems(glossary string, pages map[string]string) []string {
	terms, avoid := readGlossary(glossary)
	names := slices.Sorted(maps.Keys(pages))
	var problems []string
	for _, t := range terms {
		used := slices.ContainsFunc(names, func(p string) bool {
			return strings.Contains(spaces.ReplaceAllString(pages[p], ""), spaces.ReplaceAllString(t.text, ""))
		})
		if !used {
			problems = append(problems, fmt.Sprintf("%s:%d: got no Japanese page that uses %s, want one at least", glossaryPage, t.line, excerpt(t.text)))
		}
	}
	for _, v := range avoid {
		if !slices.ContainsFunc(terms, func(t entry) bool { return t.text == v.use }) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s, to use instead of %s, is not a term of the glossary", glossaryPage, v.line, excerpt(v.use), excerpt(v.text)))
		}
		for _, p := range names {
			for n, line := range strings.Split(pages[p], "\n") {
				if strings.Contains(line, v.text) {
					problems = append(problems, fmt.Sprintf("%s:%d: got %s, want %s (%s:%d)", p, n+1, excerpt(v.text), excerpt(v.use), glossaryPage, v.line))
				}
			}
		}
	}
	return problems
}

// Every term of the glossary is used by a Japanese page, and no Japanese
// page uses a variant the glossary says to avoid.
func TestGlossaryTermsAreUsedAsListed(t *testing.T) {
	root := ".."
	paths, err := filepath.Glob(filepath.Join(root, "docs", "src", "ja", "*.md"))
	require.NoError(t, err)
	pages := map[string]string{}
	var glossary string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if rel == glossaryPage {
			glossary = string(b)
			continue
		}
		pages[rel] = string(b)
	}
	require.NotEmpty(t, glossary, glossaryPage)
	terms, avoid := readGlossary(glossary)
	require.NotEmpty(t, terms, "the glossary's terms")
	assert.NotEmpty(t, avoid, "the glossary's section %q", avoidHeading)
	for _, problem := range glossaryProblems(glossary, pages) {
		t.Error(problem)
	}
}

// The glossary check catches a term no page uses, a variant a page uses,
// and a variant whose replacement the glossary does not list; it reads a
// term without its explanation, and spaced as a page spaces it.
func TestGlossaryCatchesAVariant(t *testing.T) {
	glossary := "# 用語集\n\n## 部品\n\n| 日本語版 | 英語版 |\n| --- | --- |\n| InMemory（インメモリ）ストア、ヒット | the in-memory store |\n| 検査器 | checker |\n\n" +
		avoidHeading + "\n\n| 使わない | 使う |\n| --- | --- |\n| チェッカー、検査機 | 検査器 |\n| 拷問テスト | 過酷テスト |\n"
	pages := map[string]string{"docs/src/ja/a.md": "InMemory ストアのヒット。\n", "docs/src/ja/b.md": "検査器。\n"}
	assert.Equal(t, []string{
		"docs/src/ja/glossary.md:15: «過酷テスト», to use instead of «拷問テスト», is not a term of the glossary",
	}, glossaryProblems(glossary, pages), "every term used, no variant")

	pages["docs/src/ja/b.md"] = "チェッカー。\n"
	pages["docs/src/ja/a.md"] += "ここで\n拷問テスト。\n"
	assert.Equal(t, []string{
		"docs/src/ja/glossary.md:8: got no Japanese page that uses «検査器», want one at least",
		"docs/src/ja/b.md:1: got «チェッカー», want «検査器» (docs/src/ja/glossary.md:14)",
		"docs/src/ja/glossary.md:15: «過酷テスト», to use instead of «拷問テスト», is not a term of the glossary",
		"docs/src/ja/a.md:3: got «拷問テスト», want «過酷テスト» (docs/src/ja/glossary.md:15)",
	}, glossaryProblems(glossary, pages))
}
