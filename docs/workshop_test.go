package docs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/weave"
)

// workshopLine returns the first line of the workshop page matching re.
func workshopLine(t *testing.T, re string) string {
	t.Helper()
	b, err := os.ReadFile("workshop.md")
	require.NoError(t, err)
	m := regexp.MustCompile(re).FindString(string(b))
	require.NotEmpty(t, m, "workshop.md has no line matching %s", re)
	return m
}

// section returns the text of the workshop page's section that starts
// with the heading prefix, up to the next "## " heading, its lines joined
// by single spaces so that a phrase broken across lines is found.
func section(t *testing.T, page, heading string) string {
	t.Helper()
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(b), "\n"+heading)
	require.True(t, ok, "%s has no section %q", page, heading)
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return strings.Join(strings.Fields(rest), " ")
}

// Section 3: the edit the page gives, made in a fresh copy of the
// repository, turns make demo-race red — on every row the page names, with
// the exit status it names; the unedited store passes the same run
// (race_tests' own test).
func TestRedGreenTrack(t *testing.T) {
	t.Parallel() // its own copy of the repository, or its own ports: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("builds and runs the race demo; skipped with -short")
	}
	edit := strings.TrimSpace(workshopLine(t, `(?m)^defer closeFD\(fd\); return crit\(\).*$`))
	clone, _ := freshClone(t, "..")
	path := filepath.Join(clone, "fixed_filestore", "lock.go")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	sig := "func (s *Store) withLock(ctx context.Context, fd int, name string, crit func() error) error {\n"
	require.Contains(t, string(src), sig, "withLock's signature, where the workshop puts the edit")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), sig, sig+"\t"+edit+"\n", 1)), 0o644))

	run := exec.Command("make", "--no-print-directory", "demo-race")
	run.Dir = clone
	out, err := run.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "make demo-race must fail without the lock; it printed:\n%s", out)
	text := section(t, "workshop.md", "## 3.")
	assert.Contains(t, text, "status "+strconv.Itoa(exit.ExitCode()), "what the page says make exits with")
	rows := regexp.MustCompile(`(?m)^(\S.*?)  +(\S.*?)  +(\S.*?)  +FAIL$`).FindAllStringSubmatch(string(out), -1)
	require.NotEmpty(t, rows, "no FAIL row in:\n%s", out)
	for _, row := range rows {
		assert.Contains(t, text, "`"+row[1]+"`", "a FAIL row the page does not name")
		if !strings.HasPrefix(row[1], "stress") { // the stress rows' counts vary
			assert.Contains(t, text, row[3], "what the page says row %q observes", row[1])
		}
	}
	assert.Contains(t, string(out), "FAIL: what ran differs from what the demo claims")
}

// Exercise 2: the command the page gives measures in the clone's tmp/,
// on the filesystem stat -f reports for the clone, and reports the ratio
// the exercise asks about. It runs in a clone of its own: in the checkout,
// the directory it makes under tmp/ would change the root's listing,
// which the package's other tests read, and go test would run them again
// next time for nothing.
func TestBenchmarkReportsBothWriteOrders(t *testing.T) {
	t.Parallel() // beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("runs a benchmark; skipped with -short")
	}
	line := strings.Trim(workshopLine(t, "`[^`]*go test -run '\\^\\$' -bench TruncateFirst \\./fixed_filestore`"), "`")
	root, _ := freshClone(t, "..")
	cmd := exec.Command("sh", "-c", line+" -benchtime 20x")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "truncfirst/store", "the column exercise 2 reads")
	assert.Contains(t, string(out), "measured in "+filepath.Join(root, "tmp")+string(filepath.Separator), "the directory measured: under the clone")
}

// Exercise 4: the hits the page gives, with the numbers it states.
func TestBeatTheWindow(t *testing.T) {
	at := func(hms string) time.Time {
		tm, err := time.Parse(time.RFC3339, "2026-07-09T"+hms+"Z")
		require.NoError(t, err)
		return tm
	}
	accepted := func(s *fixedfilestore.Store, r ratelab.Rule, times ...string) (n int) {
		for _, hms := range times {
			d, err := s.TakeAt(context.Background(), r, "ip:203.0.113.7", at(hms))
			require.NoError(t, err)
			if d.Allowed {
				n++
			}
		}
		return n
	}
	burst := []string{"00:00:00", "00:59:59", "00:59:59", "00:59:59", "00:59:59",
		"01:00:00", "01:00:00", "01:00:00", "01:00:00", "01:00:00"}
	for _, tc := range []struct {
		alg  ratelab.Algorithm
		want int
	}{{ratelab.FixedWindow, 10}, {ratelab.SlidingCounter, 5}} {
		s, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
		require.NoError(t, err)
		r := ratelab.Rule{Name: "demo-start", Limit: 5, Window: time.Hour, Algorithm: tc.alg}
		assert.Equal(t, tc.want, accepted(s, r, burst...), "%s: accepted of the ten", tc.alg)
	}

	// Coming back at each retry_after: the sliding counter lets two more
	// through before 01:59:59, the sliding log one, a millisecond after
	// 01:00:00 (the instants compared to the millisecond).
	for _, tc := range []struct {
		alg        ratelab.Algorithm
		firstRetry time.Duration
		want       []string
	}{
		{ratelab.SlidingCounter, 24 * time.Minute, []string{"01:24:00", "01:48:00"}},
		{ratelab.SlidingLog, time.Millisecond, []string{"01:00:00.001"}},
	} {
		s, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
		require.NoError(t, err)
		r := ratelab.Rule{Name: "demo-start", Limit: 5, Window: time.Hour, Algorithm: tc.alg}
		require.Equal(t, 5, accepted(s, r, burst[:5]...))
		var through []string
		var retries []time.Duration
		for now, end := at("01:00:00"), at("01:59:59"); now.Before(end); {
			d, err := s.TakeAt(context.Background(), r, "ip:203.0.113.7", now)
			require.NoError(t, err)
			if d.Allowed {
				through = append(through, strings.TrimSuffix(now.Format("15:04:05.000"), ".000"))
				continue
			}
			retries = append(retries, d.RetryAfter)
			now = now.Add(d.RetryAfter)
		}
		assert.Equal(t, tc.want, through, "%s: let through before 01:59:59", tc.alg)
		if tc.firstRetry > 0 {
			assert.Equal(t, tc.firstRetry, retries[0], "%s: the first refusal's retry_after", tc.alg)
		}
	}
}

// Exercise 5: the line the page gives, added to a fresh copy of the
// repository, makes the file store forget its state; the check the page
// gives finds it not linearizable, as the page says, every hit told the
// same; the unedited store passes the same check.
func TestTheCheckerCatchesAForgetfulStore(t *testing.T) {
	t.Parallel() // its own copy of the repository, or its own ports: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("builds a copy of the repository; skipped with -short")
	}
	edit := regexp.MustCompile("`(old = nil // [^`]*)`").FindStringSubmatch(workshopLine(t, "`old = nil // [^`]*`"))[1]
	check := strings.TrimPrefix(workshopLine(t, "`mkdir -p tmp && ratelab check -store file -model single -html tmp/ex5.html`"), "`")
	check = strings.TrimSuffix(check, "`")
	text := section(t, "workshop.md", "## 4.")
	clone, _ := freshClone(t, "..")
	run := func() (string, int) {
		out, err := weave.Build(clone, "bin/ratelab").CombinedOutput()
		require.NoError(t, err, "%s", out)
		cmd := exec.Command("sh", "-c", check)
		cmd.Dir = clone
		cmd.Env = append(os.Environ(), "PATH="+filepath.Join(clone, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err = cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		require.NoError(t, err)
		return string(out), 0
	}
	out, code := run()
	assert.Equal(t, 0, code, "the unedited store: %s", out)
	assert.True(t, strings.HasPrefix(out, "linearizable: "), "the unedited store: %s", out)

	path := filepath.Join(clone, "fixed_filestore", "hit.go")
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	anchor := regexp.MustCompile(`(?m)^\told, err := readState\(.*\n\tif err != nil \{\n.*\n\t\}\n`).FindString(string(src))
	require.NotEmpty(t, anchor, "readState's error check in readModifyWrite, where the exercise puts the line")
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(src), anchor, anchor+"\t"+edit+"\n", 1)), 0o644))
	out, code = run()
	assert.Equal(t, 1, code, "the forgetful store: exit status; %s", out)
	verdict, _, _ := strings.Cut(out, " (")
	assert.Contains(t, text, "`"+strings.Join(strings.Fields(verdict), " "), "the verdict the page shows")
	html, err := os.ReadFile(filepath.Join(clone, "tmp", "ex5.html"))
	require.NoError(t, err)
	assert.Equal(t, 80, strings.Count(string(html), "allowed, 39 left"), "every hit told allowed, 39 left")
	assert.NotContains(t, string(html), "allowed, 38 left")

	draw := exec.Command("bin/ratelab", strings.Fields("check -store file -model single -clients 1 -hits 4 -svg tmp/ex5.svg")...)
	draw.Dir = clone
	_ = draw.Run() // exit 1: not linearizable, as above
	svg, err := os.ReadFile(filepath.Join(clone, "tmp", "ex5.svg"))
	require.NoError(t, err)
	assert.Contains(t, text, "`ratelab check -store file -model single -clients 1 -hits 4 -svg tmp/ex5.svg`")
	assert.Equal(t, 4, strings.Count(string(svg), "allowed, 1 left"), "the drawing: each of four told allowed, 1 left")
	assert.Contains(t, string(svg), `fill="#900">hit 2: allowed, 1 left`, "hit 2 in red")
}

// The workshop's set-up blocks — the one done at home and section 0's,
// done again in a new terminal on the day — pasted at the root of a fresh
// clone: each runs without an error, its demos end with PASS, and after
// section 0's block the exercises' bare `ratelab` is the clone's own.
func TestWorkshopSetUpBlocksRun(t *testing.T) {
	t.Parallel() // its own copy of the repository: beside the paste, which is most of the package
	if testing.Short() {
		t.Skip("builds a copy of the repository and runs its demos; skipped with -short")
	}
	var home, day string
	for _, b := range fencedBlocks(t, "workshop.md") {
		switch {
		case b.lang == "sh" && strings.HasPrefix(b.section, "Before the day"):
			home = b.body
		case b.lang == "sh" && strings.HasPrefix(b.section, "0. Setup check"):
			day = b.body
		}
	}
	require.NotEmpty(t, home, "workshop.md: no sh block before the day")
	require.NotEmpty(t, day, "workshop.md: no sh block in section 0")
	clone, _ := freshClone(t, "..")
	for _, script := range []string{home, day + "command -v ratelab\n"} {
		cmd := exec.Command("bash", "-e", "-c", script) // a new shell each: a new terminal
		cmd.Dir = clone
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "pasted at the root of a fresh clone:\n%s\nprinted:\n%s", script, out)
		assert.Contains(t, string(out), "PASS: every row shows what the demo claims", "the demo's verdict:\n%s", out)
		if script != home {
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			assert.Equal(t, filepath.Join(clone, "bin", "ratelab"), lines[len(lines)-1], "`ratelab` after section 0's block")
		}
	}
}
