package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/flood"
	"github.com/ratelab/ratelab/lab/redisserver"
)

// TestCheckClaims runs the table of claims: every row's verdict is the
// one claimed, or the command exits 1 and the row says FAIL. It runs the
// command as make demo-check does, built without -race: what it checks is
// the verdicts, and the race-built test binary, which every process of
// every row would be, took 80.7 s where this takes 34.5 s (quiet, 2
// cores, 2026-12-06). The other check tests run check in-process, under -race.
func TestCheckClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every history of the table, the Redis and database ones on private servers; skipped with -short")
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(flood.Binary(t), "check")
	cmd.Dir, cmd.Stdout, cmd.Stderr = t.TempDir(), &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ratelab check: %v, want exit 0\n%s\n%s", err, &out, &errb)
	}
	rows, _, err := tableRows("")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		line := lineWith(out.String(), r.name+" ")
		if !strings.Contains(line, r.want+"; ") || !strings.HasSuffix(line, " ok") {
			t.Errorf("row %q: %q, want observed %q and ok", r.name, line, r.want)
		}
	}
	if !strings.Contains(out.String(), "PASS: ") {
		t.Errorf("no PASS line:\n%s", &out)
	}
}

// TestCheckRowsSaysWhatItSkipped picks a row of a server that is not
// installed (redis-server, with PATH emptied): the rows check can run
// run, and a line names the server left out and how to install it;
// picking only such rows is an error that says so, not a PASS of nothing.
func TestCheckRowsSaysWhatItSkipped(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, out, errb := cli("check", "-rows", "^(memory, single|redis, pool)$")
	if code != exitOK || lineWith(out, "memory, single ") == "" || lineWith(out, "redis, pool") != "" ||
		!strings.Contains(out, "(the redis rows were skipped: redis-server not found; install it with ") {
		t.Errorf("check -rows with a redis row, no redis-server: exit %d, want 0, the memory row run, the redis row skipped and said so\n%s%s", code, out, errb)
	}
	code, out, errb = cli("check", "-rows", "^redis, pool$")
	if code != exitFailure || strings.Contains(out, "PASS") ||
		!strings.Contains(errb, "every row it matches needs a server that is not installed: (the redis rows were skipped: redis-server not found") {
		t.Errorf("check -rows with only a redis row, no redis-server: exit %d, want 1 and why, no PASS\n%s%s", code, out, errb)
	}
}

// lineWith returns the first line of out that starts with prefix.
func lineWith(out, prefix string) string {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func TestCheckOneHistory(t *testing.T) {
	html := filepath.Join(t.TempDir(), "pool.html")
	for _, tt := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"-store", "memory", "-model", "pool", "-html", html}, exitFailure, "not linearizable: 80 operations from 4 processes"},
		{[]string{"-store", "file", "-model", "cgi", "-algorithm", "log", "-clients", "4", "-hits", "5"}, exitOK, "linearizable: 20 operations from 20 processes"},
		{[]string{"-counter", "lock-free"}, exitFailure, "not linearizable: 80 operations from 8 processes"},
		{[]string{"-store", "file", "-model", "single", "-algorithm", "sliding", "-window", "1s", "-speed", "5"}, exitOK, "linearizable: 80 operations from 1 process"},
	} {
		code, out, errb := cli(append([]string{"check"}, tt.args...)...)
		if code != tt.code || !strings.HasPrefix(out, tt.out) {
			t.Errorf("check %v: exit %d, %q; want exit %d, %q\n%s", tt.args, code, out, tt.code, tt.out, errb)
		}
		if !strings.Contains(errb, "check: the checker took ") || strings.Contains(out, "checker took") {
			t.Errorf("check %v: the checker's time belongs on stderr, as the chapter says; stdout %q, stderr %q", tt.args, out, errb)
		}
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<html") {
		t.Errorf("-html: %v, %d bytes, want porcupine's page", err, len(b))
	}
}

// -runs records one history after another until one is not
// linearizable, a verdict line for each.
func TestCheckRuns(t *testing.T) {
	for _, tt := range []struct {
		args  []string
		code  int
		lines []string
	}{
		{[]string{"-store", "memory", "-model", "single", "-clients", "2", "-hits", "3", "-runs", "3"}, exitOK,
			slices.Repeat([]string{"linearizable: 6 operations from 1 process (0 without an answer)"}, 3)},
		{[]string{"-store", "memory", "-model", "pool", "-runs", "5"}, exitFailure,
			[]string{"not linearizable: 80 operations from 4 processes (0 without an answer)"}},
	} {
		code, out, errb := cli(append([]string{"check"}, tt.args...)...)
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); code != tt.code || !slices.Equal(got, tt.lines) {
			t.Errorf("check %v: exit %d, %q; want exit %d, %q\n%s", tt.args, code, got, tt.code, tt.lines, errb)
		}
	}
}

// -rows picks rows of the table, and -runs runs it that many times,
// every time, its table one row per claim, counting the runs whose
// verdict was the one claimed; a row that differed in any run is marked
// FAIL.
func TestCheckTableRuns(t *testing.T) {
	code, out, errb := cli("check", "-rows", "^memory, (single|pool)$", "-runs", "2")
	if code != exitOK || !strings.Contains(out, "the table ran 2 times; every verdict was the one claimed in 2 of them\n") ||
		!strings.Contains(lineWith(out, "memory, pool "), "not linearizable in 2 of 2 runs  ok") ||
		lineWith(out, "memory, cgi") != "" || !strings.Contains(out, "PASS: ") {
		t.Errorf("check -rows -runs 2: exit %d, want 0, two rows, both runs as claimed\n%s\n%s", code, out, errb)
	}
	// Standard error, which the chapter describes and does not show: a
	// line for each history as it ends (2 rows × 2 runs), and one after
	// each table run — six, as the chapter says.
	if n := strings.Count(errb, "\n"); n != 2*2+2 || strings.Count(errb, "check: memory, pool: not linearizable (run ") != 2 ||
		!strings.Contains(errb, "check: table run 2 of 2: every verdict as claimed\n") {
		t.Errorf("check -rows -runs 2: stderr has %d lines, want a line for each of 2 × 2 histories and one after each table run, 6 in all:\n%s", n, errb)
	}
	wrong := checkRow{"memory, pool, claimed wrongly", "linearizable",
		checkRun{store: "memory", model: "pool", algorithm: ratelab.FixedWindow, clients: 8, hits: 10, workers: 4}}
	right := checkRow{"memory, single", "linearizable",
		checkRun{store: "memory", model: "single", algorithm: ratelab.FixedWindow, clients: 2, hits: 3}}
	var b strings.Builder
	code, err := checkClaims(&b, io.Discard, nil, []checkRow{wrong, right}, 3, func() bool { return false })
	out = b.String()
	if err != nil || code != exitFailure || !strings.Contains(out, "every verdict was the one claimed in 0 of them\n") ||
		lineWith(out, "memory, pool, claimed wrongly") != "memory, pool, claimed wrongly  linearizable in 3 of 3 runs  linearizable in 0 of 3 runs  FAIL" ||
		!strings.HasSuffix(lineWith(out, "memory, single"), "linearizable in 3 of 3 runs  ok") {
		t.Errorf("a row claimed wrongly, 3 runs: exit %d, %v, want 1, the row marked FAIL, the other ok\n%s", code, err, out)
	}
	b.Reset()
	if _, err := checkClaims(&b, io.Discard, nil, []checkRow{right}, 3, func() bool { return true }); !errors.Is(err, errInterrupted) || b.Len() > 0 {
		t.Errorf("interrupted: %v, %q; want errInterrupted before any row, nothing printed", err, b.String())
	}
}

func TestCheckUsage(t *testing.T) {
	for _, args := range [][]string{
		{"-store", "sqlite"},
		{"-store", "file", "-model", "fpm"},
		{"-store", "file", "-fault", "pause"},
		{"-store", "file", "-fault", "move"},
		{"-store", "redis", "-fault", "move", "-hits", "3"},
		{"-store", "redis", "-fault", "move", "-clients", "1"},
		{"-store", "file", "-clients", "0"},
		{"-store", "file", "-counter", "flock"},
		{"-counter", "mutex"},
		{"-html", "x.html"},
		{"-store", "file", "-algorithm", "leaky"},
		{"-store", "file", "-window", "1500ms"},
		{"-store", "file", "-speed", "101"},
		{"-store", "file", "-speed", "5", "-hits", "7"},
		{"-counter", "flock", "-speed", "5"},
		{"-store", "redis", "-fault", "failover", "-window", "1s"},
		{"-store", "file", "-runs", "0"},
		{"-rows", "("},
		{"-rows", "memory", "-fault", "kill"},
		{"-rows", "memory", "-clients", "2"},
		{"-counter", "flock", "-fault", "stop"},
		{"-counter", "flock", "-model", "cgi"},
		{"-store", "mysql", "-mistake", "reset-first", "-clients", "50"},
		{"-store", "memory", "-clients", "4294967296", "-hits", "4294967296"},
		{"-store", "memory", "-clients", "3037000500", "-hits", "3037000500"},
		{"-rows", "^no such row$"},
		{"-store", "file", "-rows", "file"},
	} {
		if code, _, errb := cli(append([]string{"check"}, args...)...); code != exitUsage {
			t.Errorf("check %v: exit %d, want %d (usage)\n%s", args, code, exitUsage, errb)
		}
	}
}

// TestCheckFigures draws the chapter's figures again: the memory store
// under a pool, one client, one hit at a time, and one client across the
// Redis failover are the same histories on every run.
func TestCheckFigures(t *testing.T) {
	for _, tt := range []struct {
		file string
		args []string
		want []string
	}{
		{"linearizability-pool.svg", []string{"-store", "memory", "-model", "pool", "-clients", "1", "-hits", "8"},
			[]string{"hit 2: allowed, 3 left", "not linearizable"}},
		{"linearizability-failover.svg", []string{"-store", "redis", "-fault", "failover", "-clients", "1"},
			[]string{"hit 31: refused", "hit 32: allowed, 29 left", "hits 34 to 61 left out", "not linearizable"}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			if tt.args[1] == "redis" {
				redisserver.Need(t)
			}
			svg := filepath.Join(t.TempDir(), tt.file)
			if code, out, errb := cli(append(append([]string{"check"}, tt.args...), "-svg", svg)...); code != exitFailure {
				t.Fatalf("exit %d, want 1 (not linearizable)\n%s%s", code, out, errb)
			}
			got, err := os.ReadFile(svg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "figures", tt.file))
			if err != nil {
				t.Fatal(err, ": run make figures")
			}
			if !bytes.Equal(got, want) {
				t.Errorf("docs/figures/%s is stale: run make figures", tt.file)
			}
			for _, w := range tt.want {
				if !bytes.Contains(got, []byte(w)) {
					t.Errorf("the figure does not show %q:\n%s", w, got)
				}
			}
		})
	}
}
