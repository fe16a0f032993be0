package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	databaselock "github.com/ratelab/ratelab/database_lock"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/lab/bench"
	"github.com/ratelab/ratelab/lab/stress"
	racetests "github.com/ratelab/ratelab/race_tests"
	boundaryreport "github.com/ratelab/ratelab/window_boundary/report"
)

// envRunCLI makes a re-executed test binary run the command line in its
// arguments, as the real binary would; harness children are dispatched
// first, exactly as in main.
const envRunCLI = "RATELAB_TEST_RUN_CLI"

func TestMain(m *testing.M) {
	childproc.RunIfChild(httphost.Roles(), racetests.Roles(), boundaryreport.Roles(), stress.Roles(), databaselock.Roles(), bench.Roles())
	if os.Getenv(envRunCLI) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	code := m.Run()
	mariadb.Stop()
	postgres.Stop()
	os.Exit(code)
}

func cli(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHitExitCodesAndJSON(t *testing.T) {
	dir := t.TempDir()
	args := []string{"hit", "-dir", dir, "-key", "ip:203.0.113.7", "-limit", "2", "-window", "1h"}
	at := func(s string) []string { return append(append([]string{}, args...), "-at", s) }

	for i, want := range []struct {
		code      int
		remaining int64
	}{{0, 1}, {0, 0}, {3, 0}} {
		code, out, errOut := cli(at("2026-07-09T00:00:00Z")...)
		assert.Equal(t, want.code, code, "hit %d exit code (stderr %q)", i+1, errOut)
		var res hitResult
		require.NoError(t, json.Unmarshal([]byte(out), &res), "hit %d output %q", i+1, out)
		require.NotNil(t, res.Remaining, "hit %d output %q", i+1, out)
		assert.Equal(t, want.remaining, *res.Remaining)
		assert.Equal(t, want.code == 0, res.Allowed)
		assert.Equal(t, int64(2), res.Limit)
		assert.Equal(t, "demo-start", res.Rule)
		assert.Equal(t, int64(3600), *res.ResetAfter)
		if want.code == 3 {
			assert.Equal(t, int64(3600), *res.RetryAfter)
		}
		assert.Equal(t, 1, strings.Count(out, "\n"), "one JSON line")
	}
	// One second before the window ends, still throttled; at its end, a new window.
	code, out, _ := cli(at("2026-07-09T00:59:59Z")...)
	assert.Equal(t, 3, code)
	assert.Contains(t, out, `"retry_after":1`)
	code, out, _ = cli(at("2026-07-09T01:00:00Z")...)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"remaining":1`)
	// The file is where the PHP original keeps demo-start:ip:203.0.113.7.
	_, err := os.Stat(filepath.Join(dir, "rate-limits", "fa404fc5fdf396553b0d7703ad73ccb8c5ee2ca7e6ba94f5399c5d635e85a1e8.json"))
	assert.NoError(t, err)
}

// The finding that opened issue 11, for every algorithm: throttled at
// 05:01:00, a hit stamped 05:00:59 must not free the key, nor must the
// next hit at 05:01:00.
func TestLateHitNeverFreesAThrottledKey(t *testing.T) {
	for _, alg := range []string{"fixed", "sliding", "log", "gcra"} {
		t.Run(alg, func(t *testing.T) {
			args := []string{"hit", "-dir", t.TempDir(), "-key", "k", "-algorithm", alg, "-limit", "5", "-window", "60s"}
			if alg == "gcra" {
				args = append(args, "-burst", "5")
			}
			hit := func(at string) int {
				code, _, errOut := cli(append(append([]string{}, args...), "-at", at)...)
				require.Contains(t, []int{0, 3}, code, errOut)
				return code
			}
			for i := range 5 {
				require.Equal(t, 0, hit("2026-07-09T05:01:00Z"), "hit %d", i+1)
			}
			assert.Equal(t, 3, hit("2026-07-09T05:01:00Z"), "the sixth")
			assert.Equal(t, 3, hit("2026-07-09T05:00:59Z"), "a hit stamped a second late")
			assert.Equal(t, 3, hit("2026-07-09T05:01:00Z"), "and the next")
		})
	}
}

// Two rules on one key keep separate states: five hits of 30/h, one of
// 5/min two minutes later, and the next 30/h hit is its sixth.
func TestRulesOnOneKeyAreApart(t *testing.T) {
	dir := t.TempDir()
	hourly := []string{"hit", "-dir", dir, "-key", "ip:203.0.113.7", "-rule", "hourly", "-limit", "30", "-window", "1h"}
	for range 5 {
		code, _, errOut := cli(append(hourly, "-at", "2026-07-09T00:00:00Z")...)
		require.Equal(t, 0, code, errOut)
	}
	code, _, errOut := cli("hit", "-dir", dir, "-key", "ip:203.0.113.7", "-rule", "minute", "-limit", "5", "-window", "1m", "-at", "2026-07-09T00:02:00Z")
	require.Equal(t, 0, code, errOut)
	code, out, errOut := cli(append(hourly, "-at", "2026-07-09T00:02:00Z")...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"remaining":24`)
	assert.Empty(t, errOut, "no clock-skew complaint: the rules never met")
}

func TestBadUsageIsOneLineAndExit2(t *testing.T) {
	dir := t.TempDir()
	html := htmlServer(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{}, "usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"hit", "-dir", dir, "-key", "k", "-bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"hit", "-dir", dir}, "-key is required"},
		{[]string{"hit", "-key", "k"}, "-dir is required"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-limit", "0"}, "-limit 0 must be positive"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-limit", "-3"}, "-limit -3 must be positive"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-window", "0s"}, "-window 0s must be a whole number of seconds"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-window", "1500ms"}, "whole number of seconds"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-at", "yesterday"}, "not an RFC 3339 time"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-at", "1969-12-31T23:59:59Z"}, "outside 1970-01-01 to 3000-01-01"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-at", "3000-01-01T00:00:00Z"}, "outside 1970-01-01 to 3000-01-01"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-window", "9000h"}, "from 1s to 8784h0m0s"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-algorithm", "leaky"}, "use fixed, sliding, log or gcra"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-algorithm", "gcra", "-burst", "31"}, "burst 31 must be from 0 to the limit"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-algorithm", "log", "-limit", "1001"}, "limit 1001 must be from 1 to 1000"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-rule", "a:b"}, "may hold only letters"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-fail", "maybe"}, "use open, closed or local"},
		{[]string{"hit", "-dir", filepath.Join(dir, "missing"), "-key", "k"}, "does not exist"},
		{[]string{"hit", "-dir", dir, "-key", "k", "extra"}, `unexpected argument "extra"`},
		{[]string{"serve", "-model", "fpm", "-store", "memory"}, "use cgi, pool, single or two-hosts"},
		{[]string{"serve", "-model", "cgi", "-store", "apcu"}, "unknown store"},
		{[]string{"serve", "-model", "cgi", "-store", "redis"}, "the redis store needs a server"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-workers", "0"}, "-workers 0 must be positive"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-workers", "100000000"}, "-workers 100000000: at most 64"},
		{[]string{"serve", "-model", "cgi", "-store", "memory", "-cgi-procs", "0"}, "-cgi-procs 0: from 1 to 256"},
		{[]string{"serve", "-model", "cgi", "-store", "memory", "-cgi-procs", "257"}, "-cgi-procs 257: from 1 to 256"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-cgi-procs", "2"}, "-cgi-procs applies to -model cgi only"},
		{[]string{"serve", "-model", "cgi", "-store", "file", "-dir", filepath.Join(dir, "missing")}, "does not exist"},
		{[]string{"serve", "-model", "cgi", "-store", "redis", "-redis", "mysql://x"}, "-redis: redisstore:"},
		// The attacker's finding: the store's own message named its
		// fields (WaitReplicas), not the flag.
		{[]string{"serve", "-model", "cgi", "-store", "redis", "-redis", "redis://127.0.0.1:6379/0", "-redis-wait", "-1"}, "-redis-wait -1 must not be negative"},
		// A port that cannot exist is bad input, not an outage to wait out.
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://127.0.0.1:99999/0"}, `port "99999" is not a number from 1 to 65535`},
		{[]string{"serve", "-model", "pool", "-store", "mysql", "-mysql", "u:p@tcp(127.0.0.1:99999)/db"}, `port "99999" is not a number from 1 to 65535`},
		{[]string{"serve", "-model", "pool", "-store", "postgres", "-postgres", "postgres://u:p@127.0.0.1:99999/db"}, "invalid port"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-addr", "999.0.0.1:1"}, "-addr 999.0.0.1:1:"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-fail", "sometimes"}, "use open, closed or local"},
		// The attacker's finding: flags for another store or algorithm were
		// accepted, and read by nothing.
		{[]string{"serve", "-model", "pool", "-store", "file", "-redis", "redis://127.0.0.1:6379/0"}, "-redis applies to -store redis only"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-burst", "3"}, "-burst applies to -algorithm gcra only"},
		{[]string{"serve", "-model", "cgi", "-store", "mysql", "-postgres", "postgres://u@127.0.0.1/db"}, "-postgres applies to -store postgres only"},
		// The attacker's finding (2026-12-06): more flags read by nothing,
		// the server started all the same.
		{[]string{"serve", "-model", "pool", "-store", "memory", "-fail", "closed"}, "-fail applies to a store that can fail (the memory store cannot) only"},
		{[]string{"serve", "-model", "pool", "-store", "file", "-redis-allow-eviction"}, "-redis-allow-eviction applies to -store redis only"},
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://127.0.0.1:6379/0", "-redis-wait-timeout", "5s"}, "-redis-wait-timeout applies to -redis-wait only"},
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://127.0.0.1:6379/0", "-dir", dir}, "-dir applies to -store file only"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-forwarded-header", "Forwarded"}, "-forwarded-header applies to -trusted-proxies only"},
		{[]string{"serve", "-model", "single", "-store", "memory", "-workers", "9"}, "-workers applies to -model pool and two-hosts only"},
		{[]string{"serve", "-model", "cgi", "-store", "memory", "-workers", "8"}, "-workers applies to -model pool and two-hosts only"},
		{[]string{"hit", "-dir", dir, "-key", "k", "-burst", "3"}, "-burst applies to -algorithm gcra only"},
		{[]string{"check", "-store", "memory", "-model", "cgi", "-workers", "3"}, "-workers applies to -model pool and two-hosts only"},
		// The attacker's findings: a -redis naming another service, a URL
		// without its //, which go-redis dials as localhost:6379, and an
		// address holding a password were outages to warn about.
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://" + html + "/0"}, "does not answer in Redis's protocol"},
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis:127.0.0.1:6379"}, "the URL names no server"},
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://127.0.0.1:1/0?addr=S3cretPW@127.0.0.1:2"}, "an address holds an '@'"},
		// The attacker's finding at 5879fdb: a password holding a '/' ends
		// the host early; go-redis quoted the rest as a path, and pgx took
		// it for a database's name and served, failing open.
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://:/S3cretQ@127.0.0.1:1/0"}, "invalid URL path: /xxxxx@127.0.0.1:1/0"},
		{[]string{"serve", "-model", "pool", "-store", "postgres", "-postgres", "postgres://u:/S3cretT@127.0.0.1:1/db"}, "a password holding '/', '?' or '#' ends the host early"},
		{[]string{"serve", "-model", "pool", "-store", "postgres", "-postgres", "postgres://u:1234?S3cretT@127.0.0.1:1/db"}, "write them as %2F, %3F and %23"},
		{[]string{"serve", "-model", "pool", "-store", "postgres", "-postgres", "postgres://u:hun#S3cretT@127.0.0.1:1/db"}, "write them as %2F, %3F and %23"},
		{[]string{"redis", "-svg", filepath.Join(dir, "f.svg"), "-requests", "5"}, "-svg does not read -requests"},
		{[]string{"boundary", "-svg", filepath.Join(dir, "b.svg"), "-processes=false"}, "-svg and -weight-svg does not read -processes"},
		{[]string{"db", "-check", "-force"}, "-check does not read -force"},
		{[]string{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://127.0.0.1:6379/0", "-redis-wait", "0", "-redis-wait-timeout", "5s"}, "-redis-wait-timeout applies to -redis-wait only"},
		{[]string{"serve", "-model", "pool", "-store", "memory", "-trusted-proxies", "", "-forwarded-header", "X-Forwarded-For"}, "-forwarded-header applies to -trusted-proxies only"},
		{[]string{"reset", "-dir", dir, "-key", "k", "-limit", "3"}, "flag provided but not defined: -limit"},
		{[]string{"reset", "-dir", dir, "-key", "k", "-at", "garbage"}, "flag provided but not defined: -at"},
		// The attacker's finding: an output path that cannot be written was
		// found only after the run, minutes later.
		{[]string{"check", "-counter", "flock", "-html", filepath.Join(dir, "missing", "h.html")}, "-html " + filepath.Join(dir, "missing", "h.html") + ": stat "},
		{[]string{"bench", "-o", dir}, "-o " + dir + ": is a directory"},
		{[]string{"demo", "-store", "apcu"}, "use memory or file"},
		{[]string{"demo", "-store", "memory", "-requests", "0"}, "-requests 0: from 1 to 100000"},
		// The attacker's findings: sizes were unbounded (boundary -limit
		// 2e8 was killed for want of memory at about 24 GB), and boundary
		// found a -burst over the limit only in its child, exit 1.
		{[]string{"demo", "-store", "memory", "-requests", "1000000000"}, "-requests 1000000000: from 1 to 100000"},
		{[]string{"demo", "-store", "memory", "-concurrency", "1001"}, "-concurrency 1001: from 1 to 1000"},
		{[]string{"demo", "-store", "memory", "-workers", "65"}, "-workers 65: at most 64"},
		{[]string{"redis", "-requests", "100001"}, "-requests 100001: from 1 to 100000"},
		{[]string{"db", "-concurrency", "0"}, "-concurrency 0: from 1 to 1000"},
		{[]string{"race", "-procs", "65"}, "-procs 65: from 1 to 64"},
		{[]string{"race", "-hits", "100001"}, "-hits 100001: from 1 to 100000"},
		{[]string{"boundary", "-limit", "200000000"}, "-limit 200000000: at most 1000"},
		{[]string{"boundary", "-burst", "31"}, "-burst 31 must be from 1 to -limit 30"},
		{[]string{"boundary", "-limit", "3", "-burst", "4"}, "-burst 4 must be from 1 to -limit 3"},
		{[]string{"inspect", "-dir", filepath.Join(dir, "missing")}, "does not exist"},
		{[]string{"sweep", "-dir", dir, "-window", "1h"}, "flag provided but not defined: -window"},
		{[]string{"sweep", "-dir", dir, "-at", "1960-01-01T00:00:00Z"}, "outside 1970-01-01"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(tt.args...)
			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut, "S3cret", "a secret in the message")
			assert.Empty(t, out)
			if len(tt.args) > 0 {
				assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			}
		})
	}
}

// The servers' addresses come from RATELAB_REDIS and RATELAB_DSN when
// their flags are unset, so that a password stays out of ps; a flag wins,
// and the password reaches no message either way.
func TestServersFromTheEnvironment(t *testing.T) {
	tests := []struct {
		env, value string
		args       []string
		want       string
	}{
		{"RATELAB_REDIS", "redis://:hunter2@127.0.0.1:99999/0", []string{"-store", "redis"}, `port "99999" is not a number`},
		{"RATELAB_REDIS", "redis://:hunter2@127.0.0.1:99999/0", []string{"-store", "redis", "-redis", "mysql://x"}, "-redis: redisstore:"},
		{"RATELAB_REDIS", "redis://127.0.0.1:1/0?addr=u:hunter2@127.0.0.1:1", []string{"-store", "redis"}, "unable to parse addr param: u:xxxxx@"},
		{"RATELAB_DSN", "u:hunter2@tcp(127.0.0.1:99999)/db", []string{"-store", "mysql"}, `port "99999" is not a number`},
		{"RATELAB_DSN", "postgres://u:hunter2@127.0.0.1:99999/db", []string{"-store", "postgres"}, "invalid port"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			code, out, errOut := cli(append([]string{"serve", "-model", "pool"}, tt.args...)...)
			assert.Equal(t, 2, code, "stdout %q, stderr %q", out, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut+out, "hunter2")
		})
	}
}

// The attacker's findings at 7ccef37: a key=value string left unquoted in
// the shell splits into arguments, and "unexpected argument" quoted the
// password= piece back; pgx's own mask of password= stops at a space and
// printed the rest.
func TestNoMessageQuotesAPassword(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-postgres", "host=127.0.0.1", "password=Zq9Wk7"}, "unexpected argument (not shown: the command line holds a connection string, which may hold a password; one with spaces goes in quotes)"},
		{[]string{"-postgres", "host=127.0.0.1 password= Zq9Wk7 sslmode=bogus"}, "sslmode is invalid"},
		{[]string{"-postgres", `host=127.0.0.1 password=Zq9\ Wk7 sslmode=bogus`}, "sslmode is invalid"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := cli(append([]string{"serve", "-model", "pool", "-store", "postgres"}, tt.args...)...)
			assert.Equal(t, 2, code, "stdout %q, stderr %q", out, errOut)
			assert.Contains(t, errOut, tt.want)
			assert.NotContains(t, errOut+out, "Zq9")
			assert.NotContains(t, errOut+out, "Wk7")
		})
	}
	// The attacker's findings at 0574388: the shell split a password into
	// two arguments, and the second was quoted back, as an unexpected
	// argument or as a flag not defined. With a connection string on the
	// command line no argument is quoted back.
	for _, args := range [][]string{
		{"serve", "-model", "pool", "-store", "postgres", "-postgres", "password=", "Zq9Wk7"},
		{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://u:Zq9", "Wk7@127.0.0.1:1/0"},
		{"serve", "-model", "pool", "-store", "redis", "-redis", "redis://u:Zq9", "-Wk7@127.0.0.1:1/0"},
		{"serve", "-model", "pool", "-store", "redis", "--redis=redis://u:Zq9", "-Wk7"},
		{"serve", "-model", "pool", "-store", "mysql", "-mysql", "u:Zq9", "Wk7@tcp(127.0.0.1:1)/d"},
		{"redis", "-redis", "redis://u:Zq9", "Wk7@127.0.0.1:1/0"},
		{"db", "-postgres", "password=", "Zq9Wk7"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := cli(args...)
			assert.Equal(t, 2, code, "stdout %q, stderr %q", out, errOut)
			assert.Contains(t, errOut, "not shown: the command line holds a connection string")
			assert.NotContains(t, errOut+out, "Zq9")
			assert.NotContains(t, errOut+out, "Wk7")
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, out, _ := cli("hit", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "-key")
}

func TestHitFailClosedIsAFailure(t *testing.T) {
	base := t.TempDir()
	code, _, _ := cli("hit", "-dir", base, "-key", "k")
	require.Equal(t, 0, code)
	// Something that is not a file where the state belongs.
	entries, err := os.ReadDir(filepath.Join(base, "rate-limits"))
	require.NoError(t, err)
	path := filepath.Join(base, "rate-limits", entries[0].Name())
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Mkdir(path, 0o700))

	code, out, errOut := cli("hit", "-dir", base, "-key", "k", "-fail", "closed")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "rate-limit state unavailable")

	code, out, _ = cli("hit", "-dir", base, "-key", "k", "-fail", "open")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"source":"uncounted","cause":`)
	// It claims no state it does not know: it printed "remaining":29.
	assert.NotContains(t, out, `"remaining"`)
}

func TestInspectAndSweep(t *testing.T) {
	base := t.TempDir()
	for _, key := range []string{"a", "a", "b"} {
		code, _, errOut := cli("hit", "-dir", base, "-key", key, "-at", "2026-07-09T00:00:00Z")
		require.Equal(t, 0, code, errOut)
	}
	garbage := filepath.Join(base, "rate-limits", strings.Repeat("0", 64)+".json")
	require.NoError(t, os.WriteFile(garbage, []byte("{oops"), 0o600))

	code, out, _ := cli("inspect", "-dir", base, "-at", "2026-07-09T00:30:00Z")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "count=2  reset_at=1783558800 (2026-07-09T01:00:00Z)  live")
	assert.Contains(t, out, "count=1  reset_at=1783558800 (2026-07-09T01:00:00Z)  live")
	assert.Contains(t, out, "unreadable: algorithm: state is not valid JSON")
	assert.Contains(t, out, "3 state files")

	code, out, _ = cli("inspect", "-dir", base, "-at", "2026-07-09T01:00:00Z")
	assert.Equal(t, 0, code)
	assert.Equal(t, 2, strings.Count(out, "  expired"))

	// The sweep judges by the states: live at 00:30, over (and a minute
	// past, for late hits) at 01:01; the unreadable file is left alone.
	code, out, _ = cli("sweep", "-dir", base, "-at", "2026-07-09T00:30:00Z")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "removed 0, kept 2, busy 0, skipped 1")
	code, out, _ = cli("sweep", "-dir", base, "-at", "2026-07-09T01:01:00Z")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "removed 2, kept 0, busy 0, skipped 1")

	// A planted name with a newline and an escape cannot fake a line.
	require.NoError(t, os.WriteFile(filepath.Join(base, "rate-limits", "x\nremoved 99, kept 0\x1b[2K"), nil, 0o600))
	code, out, _ = cli("sweep", "-dir", base, "-at", "2026-07-09T01:01:00Z")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `skipped "x\nremoved 99, kept 0\x1b[2K"`)
	assert.Len(t, regexp.MustCompile(`(?m)^removed `).FindAllString(out, -1), 1, "one summary line: %q", out)

	// Nor can a planted file whose content is a valid state fake a line
	// of inspect's: a name that is not a state's is not listed.
	planted := "y\n9 state files in tmp\x1b[2K.json"
	require.NoError(t, os.WriteFile(filepath.Join(base, "rate-limits", planted), []byte(`{"count":1,"reset_at":1783558800}`), 0o600))
	code, out, _ = cli("inspect", "-dir", base, "-at", "2026-07-09T00:30:00Z")
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "9 state files")
	assert.Len(t, regexp.MustCompile(`(?m)^\d+ state files`).FindAllString(out, -1), 1, "one summary line: %q", out)
}

// serve, as a workshop participant runs it: the first line is the URL, curl
// (here a plain HTTP client) sees 429 from #31 with the file store under
// CGI, and Ctrl-C stops it cleanly.
func TestServePrintsURLAndThrottles(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "serve", "-model", "cgi", "-store", "file", "-limit", "3", "-addr", "127.0.0.1:0", "-dir", t.TempDir())
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	stderr := new(syncbuf.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	url, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "no URL line; stderr: %s", stderr.String())
	url = strings.TrimSpace(url)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "first line %q", url)

	var codes []int
	pids := map[string]bool{}
	for range 4 {
		resp, err := http.Post(url, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		pids[resp.Header.Get("X-Ratelab-Pid")] = true
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes)
	assert.Len(t, pids, 4, "under CGI every request is a new process")

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, cmd.Wait(), "serve must exit 0 on Ctrl-C; stderr: %s", stderr.String())
}

// make bench's report, on a short run: every section and every target is
// there, judged.
func TestBenchQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("measures every store, on private Redis, MariaDB and PostgreSQL servers; skipped with -short")
	}
	code, out, errOut := cli("bench", "-quick")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{"# Performance", "| in-memory store", "| syscall floor", "| **file store", "truncate-first",
		"| processes |", "| 2 |", "## Targets", "fixed, ≤ 1.2 × the syscall floor", "log, ≤ 1.5 × the syscall floor", "p99 of a hitter's hits, bounded / blocking", "A sleep of 20 µs asked of Go's timers"} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `took [0-9.]+ (µs|ms) here`, out, "the sleep is measured, not assumed")
	assert.Regexp(t, `(?m)^- target: .* — (met|not met)( \([0-9.]+(, spread [0-9.]+–[0-9.]+)?\))?$`, out)
}

// ratelab reset unblocks one key of one rule, and nothing else.
func TestResetUnblocksOneKey(t *testing.T) {
	dir := t.TempDir()
	hit := func(key string) int {
		code, _, errOut := cli("hit", "-dir", dir, "-key", key, "-limit", "1", "-at", "2026-07-09T00:00:00Z")
		require.Contains(t, []int{0, 3}, code, errOut)
		return code
	}
	hit("a")
	hit("b")
	require.Equal(t, 3, hit("a"))
	code, out, errOut := cli("reset", "-dir", dir, "-key", "a")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `reset `)
	assert.Contains(t, out, `"a" under rule "demo-start" (fixed)`)
	assert.Equal(t, 0, hit("a"), "a is unblocked")
	assert.Equal(t, 3, hit("b"), "b is not")
	code, _, _ = cli("reset", "-dir", dir)
	assert.Equal(t, 2, code, "-key is required")
}

// The usage is made from the command table: every command has its line
// and its help, every command runs, and the package documentation names
// every command in its list of families. Every flag a usage line names is
// one the command defines (its -h), shown with the default it has.
func TestUsageComesFromTheCommandTable(t *testing.T) {
	code, out, _ := cli("help")
	require.Equal(t, 0, code)
	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	doc := string(src[:strings.Index(string(src), "package main")])
	for _, c := range commands() {
		line := regexp.MustCompile(`(?m)^  ratelab ` + regexp.QuoteMeta(c.name) + ` +(.*)$`).FindStringSubmatch(out)
		if !assert.NotNil(t, line, "usage line of %s", c.name) {
			continue
		}
		assert.Regexp(t, `(?m)^  `+c.name+` +`+regexp.QuoteMeta(c.help)+`$`, out, "help line of %s", c.name)
		assert.Regexp(t, `[ ,]`+c.name+`[ ,]`, doc, "the package doc names %s", c.name)
		defined := definedFlags(usageHelp(t, c.name))
		for name := range defined { // the finding: check's line lacked -svg, -counter, -mistake
			assert.Regexp(t, `(^|[\s\[])-`+name+`([\s\]=]|$)`, line[1], "ratelab %s defines -%s, which its usage line does not name", c.name, name)
		}
		for _, m := range regexp.MustCompile(`(?:^|[\s\[])-([a-z][a-z-]*)(=false|\s[^\s\]]+)?`).FindAllStringSubmatch(line[1], -1) {
			name, shown := m[1], strings.TrimSpace(m[2])
			fl, ok := defined[name]
			if !assert.True(t, ok, "%s's usage names -%s, which it does not define", c.name, name) {
				continue
			}
			if msg := fl.check(shown); msg != "" {
				t.Errorf("ratelab %s: usage shows -%s %q: got %s", c.name, name, shown, msg)
			}
		}
	}
	// and the table writes no default by hand: [-limit], not [-limit 30].
	for _, c := range commands() {
		defined := definedFlags(usageHelp(t, c.name))
		for _, m := range regexp.MustCompile(`\[-([a-z][a-z-]*) ([^\s\]|]+)\]`).FindAllStringSubmatch(c.args, -1) {
			if fl := defined[m[1]]; fl.def != "" && sameValue(fl.typ, m[2], fl.def) {
				t.Errorf("ratelab %s: the table writes [-%s %s] by hand: got the default twice, want [-%s]", c.name, m[1], m[2], m[1])
			}
		}
	}
	code, _, errOut := cli("frobnicate")
	assert.Equal(t, 2, code)
	for _, c := range commands() {
		assert.Contains(t, errOut, c.name, "the unknown-command line lists %s", c.name)
	}
}

// usageHelp is what ratelab COMMAND -h prints.
func usageHelp(t *testing.T, command string) string {
	t.Helper()
	code, help, _ := cli(command, "-h")
	require.Equal(t, 0, code, "%s -h", command)
	return help
}

// definedFlag is one flag as -h prints it: its value's type ("" for a
// bool) and its default ("" for the zero value).
type definedFlag struct{ typ, def string }

// definedFlags reads the flags out of a command's -h (flag.PrintDefaults).
func definedFlags(help string) map[string]definedFlag {
	out := map[string]definedFlag{}
	re := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)(?: (\S+))?(?:\t|\n    \t)(.*)$`)
	for _, m := range re.FindAllStringSubmatch(help, -1) {
		fl := definedFlag{typ: m[2]}
		if d := regexp.MustCompile(`\(default (.*)\)$`).FindStringSubmatch(m[3]); d != nil {
			fl.def = d[1]
			if u, err := strconv.Unquote(d[1]); err == nil {
				fl.def = u
			}
		}
		out[m[1]] = fl
	}
	return out
}

// check returns what is wrong with a usage line showing the flag as
// shown, or "": a bool shows no value (=false if it defaults to true); a
// flag with a default shows it, alone or among choices a|b|c; a flag
// without one shows a placeholder (DIR, N) or its choices.
func (fl definedFlag) check(shown string) string {
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9,…]*$`).MatchString(shown)
	choices := strings.Split(shown, "|")
	switch {
	case fl.typ == "" && fl.def == "true":
		if shown != "=false" {
			return "a bool that defaults to true, want =false"
		}
	case fl.typ == "":
		if shown != "" {
			return "a bool, want no value"
		}
	case fl.def == "":
		if !placeholder && len(choices) < 2 {
			return "no default, want a placeholder or the choices"
		}
	case len(choices) > 1:
		if !slices.Contains(choices, fl.def) {
			return fmt.Sprintf("choices without the default %q", fl.def)
		}
	case !sameValue(fl.typ, shown, fl.def):
		return fmt.Sprintf("the default is %q", fl.def)
	}
	return ""
}

// sameValue compares two spellings of a value of type typ.
func sameValue(typ, a, b string) bool {
	if typ == "duration" {
		da, errA := time.ParseDuration(a)
		db, errB := time.ParseDuration(b)
		return errA == nil && errB == nil && da == db
	}
	return a == b
}

// htmlServer is a server on loopback that answers every connection with
// an HTML page, as a web server answers a request it cannot read, and
// closes it; it returns its host:port.
func htmlServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Read(make([]byte, 4096))
			conn.Write([]byte("<!DOCTYPE HTML>\n<html><body>Error response</body></html>\n"))
			conn.Close()
		}
	}()
	return ln.Addr().String()
}
