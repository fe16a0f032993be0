package docs

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tableOf returns the rows of the first table after heading in the
// Markdown file page, each as its cells, without the header and the
// separator.
func tableOf(t *testing.T, page, heading string) [][]string {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	require.True(t, ok, "%s has no %q", page, heading)
	var rows [][]string
	for _, l := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(l, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	require.Greater(t, len(rows), 2, "%s: the table after %q", page, heading)
	return rows[2:]
}

// The newcomer's finding at e34c31a: the database chapter's costs were
// an older run's, beside a table make bench had since rewritten. Each
// figure the chapter quotes is a cell of the table it names, and its
// claim that synchronous_commit=off costs less is the table's.
func TestDatabaseChapterQuotesThePerformanceTable(t *testing.T) {
	rows := tableOf(t, "performance.md", "## Databases")
	require.Len(t, rows, 4, "MariaDB and PostgreSQL, each with two flush settings")
	page, err := os.ReadFile("src/database-lock.md")
	require.NoError(t, err)
	prose := strings.Join(strings.Fields(string(page)), " ")
	const fixed, ratio = 3, 4 // the fixed window's µs and its ÷ UPDATE
	for _, r := range rows {
		if !strings.Contains(prose, r[ratio]) {
			t.Errorf("src/database-lock.md does not quote the fixed window's %q of performance.md's row %q", r[ratio], r[0])
		}
	}
	require.Contains(t, rows[2][0], "synchronous_commit=off")
	require.Contains(t, rows[3][0], "synchronous_commit=on")
	off, on := rows[2][fixed], rows[3][fixed]
	if !strings.Contains(prose, off+" against "+on) {
		t.Errorf("src/database-lock.md does not quote PostgreSQL's %s against %s", off, on)
	}
	µs := func(s string) float64 {
		f, err := strconv.ParseFloat(strings.TrimSuffix(s, " µs"), 64)
		require.NoError(t, err, s)
		return f
	}
	if µs(off) >= µs(on) {
		t.Errorf("the chapter says synchronous_commit=off costs less; the table has %s against %s", off, on)
	}
}
