package docs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// numberExceptions are the numbers of an English line that its Japanese
// twin may leave out, each with the reason: page is the Japanese source,
// in a piece of the English line, number the number that line has.
var numberExceptions = []struct{ page, in, number, why string }{
	{"docs/src/ja/README.md", "90-minute workshop.", "90",
		"the root README's Read next points to docs/README.md, the course index, which the Japanese README is itself: " +
			"it has no Read next, and its course section names the 90-minute workshop once, as the index does"},
	{"docs/src/ja/workshop.md", "prose (about 350 words)", "350",
		"the reading estimate counts the Japanese prose in characters (about 1,000) at 250 a minute, where the English counts words"},
}

var (
	// number is a run of digits with its decimals, or a word that begins
	// with letters and has digits.
	number = regexp.MustCompile(`[A-Za-z_]*\d+(?:\.\d+)*`)
	// thousands is a group after a separator, groupable a number before
	// one.
	thousands  = regexp.MustCompile(`^\d{3}(\.\d+)?$`)
	groupable  = regexp.MustCompile(`^\d{1,3}(\d{3})*$`)
	separators = ",\u00a0\u202f\u2009 "
	// notProse is what other checks compare, or what is not read: code
	// spans, where a link goes, and addresses written out.
	notProse  = regexp.MustCompile("``[^`]*``|`[^`]*`|\\]\\([^)]*\\)|<?https?://[^\\s>)]+>?")
	startsOne = regexp.MustCompile(`^\s*(#+ |[-*+] |\d+\. )`)
	separator = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)
)

// numberAt is one number of a page's prose and the line that has it.
type numberAt struct {
	n, page, text string
	line          int
}

// para is a paragraph of prose, a list item or a heading: its lines,
// from the first, and its numbers.
type para struct {
	page  string
	line  int
	lines []string
	nums  []numberAt
}

// read lists the paragraph's numbers: a code span may go on to the next
// line.
func (p *para) read() {
	text := notProse.ReplaceAllStringFunc(strings.Join(p.lines, "\n"), func(m string) string {
		return strings.Map(func(r rune) rune { return map[bool]rune{true: r, false: ' '}[r == '\n'] }, m)
	})
	for i, l := range strings.Split(text, "\n") {
		p.nums = append(p.nums, numbersIn(p.page, l, p.lines[i], p.line+i)...)
	}
}

// row is a table row: its cells, and its line.
type row struct {
	page, text string
	line       int
	cells      []string
}

// proseOf is what the number check reads of a page: its paragraphs, in
// segments that the page's commands, regions, figures and code blocks —
// the things the parity check keeps in order — separate, and its tables.
type proseOf struct {
	segs   [][]para
	tables [][]row
}

// readProse reads sources one after the other, as one page.
func readProse(srcs ...source) proseOf {
	p := proseOf{segs: [][]para{nil}}
	for _, s := range srcs {
		var cur *para
		var tab []row
		block, lang := false, ""
		flush := func() {
			if cur != nil {
				cur.read()
				p.segs[len(p.segs)-1] = append(p.segs[len(p.segs)-1], *cur)
				cur = nil
			}
			if tab != nil {
				p.tables = append(p.tables, tab)
				tab = nil
			}
		}
		anchor := func() { flush(); p.segs = append(p.segs, nil) }
		for n, line := range strings.Split(s.text, "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case block && trimmed == "```":
				block = false
				if lang != "text" {
					anchor()
				}
			case block:
			case strings.HasPrefix(line, "```"):
				flush()
				block, lang = true, strings.TrimSpace(strings.TrimPrefix(line, "```"))
			case strings.HasPrefix(line, "%run ") || strings.HasPrefix(line, "%include "):
				anchor()
			case trimmed == "":
				flush()
			case strings.HasPrefix(trimmed, "|"):
				if cur != nil || tab == nil {
					flush()
				}
				if !separator.MatchString(trimmed) {
					tab = append(tab, row{page: s.path, text: trimmed, line: n + 1, cells: cells(trimmed)})
				}
			default:
				if cur == nil || tab != nil || startsOne.MatchString(line) {
					flush()
					cur = &para{page: s.path, line: n + 1}
				}
				cur.lines = append(cur.lines, trimmed)
				if hasFigure(s, line) {
					anchor()
				}
			}
		}
		flush()
	}
	return p
}

func hasFigure(s source, line string) bool {
	return slices.ContainsFunc(target.FindAllStringSubmatch(line, -1), func(m []string) bool {
		kind, _ := linkKind(s.wovenDir, m[2])
		return kind == "figure"
	})
}

// numbersIn lists the numbers of a line of prose whose code and links'
// targets are blanked out, in full-width digits or not; a number written
// with thousands separators (4,000 or 7 200) is one number, and a word
// that begins with letters (sha256, ext4, v1.3.1) is none.
func numbersIn(page, prose, line string, n int) []numberAt {
	text := strings.Map(func(r rune) rune {
		if r >= '０' && r <= '９' {
			return '0' + r - '０'
		}
		return r
	}, prose)
	var nums []numberAt
	end := -1
	for _, m := range number.FindAllStringIndex(text, -1) {
		tok := text[m[0]:m[1]]
		last := len(nums) - 1
		sep := ""
		if end >= 0 {
			sep = text[end:m[0]]
		}
		if last >= 0 && utf8.RuneCountInString(sep) == 1 && strings.Contains(separators, sep) &&
			groupable.MatchString(nums[last].n) && thousands.MatchString(tok) {
			nums[last].n += tok
		} else if unicode.IsDigit(rune(tok[0])) {
			nums = append(nums, numberAt{n: tok, page: page, text: line, line: n})
		}
		end = m[1]
	}
	return nums
}

// cells splits a table row, leaving a | inside a code span in its cell.
func cells(r string) []string {
	var out []string
	var cell strings.Builder
	code := false
	for _, c := range strings.TrimSuffix(strings.TrimPrefix(r, "|"), "|") {
		switch {
		case c == '`':
			code = !code
		case c == '|' && !code:
			out = append(out, strings.TrimSpace(cell.String()))
			cell.Reset()
			continue
		}
		cell.WriteRune(c)
	}
	return append(out, strings.TrimSpace(cell.String()))
}

// exact is the cell as it must be the same in both languages: a number
// (no letter, a digit), without spaces and thousands separators, or a
// code span; "" for a cell that is translated.
func exact(cell string) string {
	if strings.Count(cell, "`") == 2 && strings.HasPrefix(cell, "`") && strings.HasSuffix(cell, "`") {
		return cell
	}
	if strings.ContainsFunc(cell, unicode.IsLetter) || !strings.ContainsFunc(cell, unicode.IsDigit) {
		return ""
	}
	return strings.NewReplacer(" ", "", ",", "").Replace(cell)
}

// numberParity returns each number of the English prose that the Japanese
// page lacks, and each table row it lacks or has otherwise.
func numberParity(p twin) []string {
	en, ja := readProse(p.en...), readProse(p.ja)
	var problems []string
	if len(en.segs) == len(ja.segs) {
		for i := range en.segs {
			problems = append(problems, segmentNumbers(p.ja.path, en.segs[i], ja.segs[i])...)
		}
	} else { // the parity check says where the anchors differ
		problems = append(problems, segmentNumbers(p.ja.path, slices.Concat(en.segs...), slices.Concat(ja.segs...))...)
	}
	for i, t := range en.tables {
		if i >= len(ja.tables) {
			problems = append(problems, fmt.Sprintf("%s: missing table: got %d tables, want %s:%d %s", p.ja.path, len(ja.tables), t[0].page, t[0].line, excerpt(t[0].text)))
			continue
		}
		problems = append(problems, tableRows(p.ja.path, t, ja.tables[i])...)
	}
	return problems
}

// segmentNumbers compares paragraph with paragraph where both languages
// have as many between two anchors, and the whole segment where not.
func segmentNumbers(page string, en, ja []para) []string {
	if len(en) == len(ja) {
		var problems []string
		for i := range en {
			problems = append(problems, carries(page, en[i:i+1], ja[i:i+1])...)
		}
		return problems
	}
	return carries(page, en, ja)
}

// carries returns each number of the English paragraphs that the
// Japanese ones have fewer times, at the English line that has it.
func carries(page string, en, ja []para) []string {
	have := map[string]int{}
	for _, p := range ja {
		for _, n := range p.nums {
			have[n.n]++
		}
	}
	got := "nothing"
	if len(ja) == 1 {
		got = fmt.Sprintf("line %d %s", ja[0].line, excerpt(ja[0].lines[0]))
	} else if len(ja) > 1 {
		got = fmt.Sprintf("lines %d–%d", ja[0].line, ja[len(ja)-1].line)
	}
	var problems []string
	for _, p := range en {
		for _, n := range p.nums {
			switch {
			case excepted(page, n):
			case have[n.n] > 0:
				have[n.n]--
			default:
				problems = append(problems, fmt.Sprintf("%s: missing number %s: got %s, want %s:%d %s", page, n.n, got, n.page, n.line, excerpt(n.text)))
			}
		}
	}
	return problems
}

func excepted(page string, n numberAt) bool {
	return slices.ContainsFunc(numberExceptions, func(e struct{ page, in, number, why string }) bool {
		return e.page == page && e.number == n.n && strings.Contains(n.text, e.in)
	})
}

// tableRows compares two tables row by row, by the cells that must be the
// same: the same rows, the same numbers and code in them, and the numbers
// of the translated cells.
func tableRows(page string, en, ja []row) []string {
	var problems []string
	if len(en) != len(ja) {
		problems = append(problems, fmt.Sprintf("%s:%d: got a table of %d rows, want %d: %s:%d", page, ja[0].line, len(ja), len(en), en[0].page, en[0].line))
	}
	key := func(rows []row) []item {
		var items []item
		for _, r := range rows {
			var k []string
			for _, c := range r.cells {
				k = append(k, exact(c))
			}
			items = append(items, item{kind: "row", text: strings.Join(k, "|"), line: r.line})
		}
		return items
	}
	k := lcs(key(en), key(ja))
	for i, r := range en {
		switch {
		case k.en[i]:
			problems = append(problems, carries(page, []para{rowPara(r)}, []para{rowPara(ja[k.at[i]])})...)
		case i < len(ja) && !k.ja[i]:
			problems = append(problems, fmt.Sprintf("%s:%d: row differs: got %s, want %s:%d %s", page, ja[i].line, excerpt(ja[i].text), r.page, r.line, excerpt(r.text)))
			k.ja[i] = true
		default:
			problems = append(problems, fmt.Sprintf("%s: missing row: got none, want %s:%d %s", page, r.page, r.line, excerpt(r.text)))
		}
	}
	for j, r := range ja {
		if !k.ja[j] {
			problems = append(problems, fmt.Sprintf("%s:%d: row not in the English table: got %s, want none", page, r.line, excerpt(r.text)))
		}
	}
	return problems
}

// rowPara is a row's translated cells as a paragraph.
func rowPara(r row) para {
	p := para{page: r.page, line: r.line, lines: []string{r.text}}
	for _, c := range r.cells {
		if exact(c) == "" {
			p.nums = append(p.nums, numbersIn(r.page, notProse.ReplaceAllString(c, " "), r.text, r.line)...)
		}
	}
	return p
}

// excerpt quotes a line, cut at 100 characters.
func excerpt(s string) string {
	if utf8.RuneCountInString(s) > 100 {
		s = string([]rune(s)[:99]) + "…"
	}
	return "«" + s + "»"
}

// Each Japanese page has every number of its English twin's prose, and
// its tables have the same rows with the same numbers and code.
func TestJapanesePagesCarryEveryNumber(t *testing.T) {
	for _, p := range twins(t, "..") {
		for _, problem := range numberParity(p) {
			t.Error(problem)
		}
	}
}

// The number check catches a number the Japanese page dropped, a table
// cell changed and a table row added, and reads 4,000 as 4000.
func TestParityCatchesANumberDrift(t *testing.T) {
	en := source{path: "docs/src/x.md", wovenDir: "docs", text: "# X\n\nOf 4,000 hits, 36 of 70\nwere lost (`-n 5`).\n\n%run a\n\n| n | hits |\n| ---: | --- |\n| 1 | `a` |\n| 2 | 3 lost |\n"}
	ja := source{path: "docs/src/ja/x.md", wovenDir: "docs/ja", text: "# X\n\n4000 ヒットのうち、70 のうち 36 が失われた（`-n 6`）。\n\n%run a\n\n| n | ヒット |\n| ---: | --- |\n| 1 | `a` |\n| 2 | 3 件が消えた |\n"}
	assert.Empty(t, numberParity(twin{ja: ja, en: []source{en}}), "a faithful twin, its code spans aside")

	drifted := en
	drifted.text = strings.Replace(en.text, "were lost", "were lost in 2 runs", 1)
	drifted.text = strings.Replace(drifted.text, "| 1 | `a` |", "| 1 | `b` |", 1)
	drifted.text += "| 3 | 5 lost |\n"
	drifted.text = strings.Replace(drifted.text, "| 2 | 3 lost |", "| 2 | 4 lost |", 1)
	assert.Equal(t, []string{
		"docs/src/ja/x.md: missing number 2: got line 3 «4000 ヒットのうち、70 のうち 36 が失われた（`-n 6`）。», want docs/src/x.md:4 «were lost in 2 runs (`-n 5`).»",
		"docs/src/ja/x.md:7: got a table of 3 rows, want 4: docs/src/x.md:8",
		"docs/src/ja/x.md:9: row differs: got «| 1 | `a` |», want docs/src/x.md:10 «| 1 | `b` |»",
		"docs/src/ja/x.md: missing number 4: got line 10 «| 2 | 3 件が消えた |», want docs/src/x.md:11 «| 2 | 4 lost |»",
		"docs/src/ja/x.md: missing row: got none, want docs/src/x.md:12 «| 3 | 5 lost |»",
	}, numberParity(twin{ja: ja, en: []source{drifted}}))
}
