package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/lab/lighttpdserver"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// wrapper is the two-line cgi-bin wrapper the documentation shows, with
// this test binary standing in for ratelab (and the race detector told
// not to sleep at exit).
func wrapper(t *testing.T, args string) string {
	exe, err := os.Executable()
	require.NoError(t, err)
	return "#!/bin/sh\nGORACE=atexit_sleep_ms=0 " + envRunCLI + "=1 exec " + exe + " cgi " + args + "\n"
}

func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// The lesson under a web server nobody in this repository wrote: lighttpd's
// mod_cgi runs ratelab cgi once per request, as shared hosting does. The
// in-memory store never answers 429; the file store answers 429 from #31
// with Retry-After and the RateLimit fields, each client address with a
// bucket of its own; a configuration error is a 500 whose reason is only
// in the server's error log.
func TestUnderLighttpd(t *testing.T) {
	state := t.TempDir()
	srv := lighttpdserver.ForTest(t, map[string]string{
		"memory": wrapper(t, "-store memory -limit 30 -window 1h"),
		"file":   wrapper(t, "-store file -dir "+state+" -limit 30 -window 1h"),
		"broken": wrapper(t, "-store file -dir "+state+"/missing -limit 30 -window 1h"),
	})
	get := func(c *http.Client, script string) *http.Response {
		resp, err := c.Post(srv.URL+"/cgi-bin/"+script, "", nil)
		require.NoError(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	one := clientFrom("127.0.0.2")

	t.Run("memory never answers 429, and always says r=29", func(t *testing.T) {
		pids := map[string]bool{}
		for i := range 40 {
			resp := get(one, "memory")
			require.Equal(t, http.StatusOK, resp.StatusCode, "request %d; error log: %s", i+1, srv.ErrorLog())
			// Each process's new store has counted one hit: this one.
			require.Regexp(t, `^"demo-start";r=29;t=\d+$`, resp.Header.Get("RateLimit"), "request %d", i+1)
			pids[resp.Header.Get("X-Ratelab-Pid")] = true
		}
		assert.Len(t, pids, 40, "every request a new process")
	})
	t.Run("file answers 429 from #31", func(t *testing.T) {
		var first429 int
		var last *http.Response
		start := time.Now() // the window opens with the first request, on the real clock
		for i := 1; i <= 40; i++ {
			last = get(one, "file")
			if last.StatusCode == http.StatusTooManyRequests && first429 == 0 {
				first429 = i
			}
		}
		elapsed := time.Since(start)
		assert.Equal(t, 31, first429, "error log: %s", srv.ErrorLog())
		assert.Equal(t, http.StatusTooManyRequests, last.StatusCode)
		// Retry-After counts down from 3600 s on the real clock; it is an
		// integer rounded up, equal to the RateLimit field's t.
		retry, err := strconv.Atoi(last.Header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", last.Header.Get("Retry-After"))
		assert.LessOrEqual(t, retry, 3600)
		assert.GreaterOrEqual(t, retry, 3600-int(elapsed/time.Second)-1, "after %v", elapsed)
		assert.Equal(t, `"demo-start";q=30;w=3600`, last.Header.Get("RateLimit-Policy"))
		assert.Equal(t, fmt.Sprintf(`"demo-start";r=0;t=%d`, retry), last.Header.Get("RateLimit"))
		assert.Equal(t, http.StatusOK, get(clientFrom("127.0.0.3"), "file").StatusCode, "another address, another bucket")
	})
	t.Run("a configuration error is a 500 whose reason is only in the error log", func(t *testing.T) {
		resp, err := one.Post(srv.URL+"/cgi-bin/broken", "", nil)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		assert.Equal(t, httphost.CGIErrorBody+"\n", string(body), "no path, address or password reaches a visitor")
		assert.Contains(t, srv.ErrorLog(), "does not exist", "the reason reaches the server's error log")
	})
}

// The finding: a -redis URL whose password the URL parser refuses (a
// space in it) was quoted back whole in the 500 page — to any visitor —
// and in the error log. Neither may show it.
func TestCGIShowsNoPassword(t *testing.T) {
	srv := lighttpdserver.ForTest(t, map[string]string{
		"redis": wrapper(t, "-store redis -redis 'redis://:S3cret pw@127.0.0.1:16379/0' -limit 30 -window 1h"),
	})
	resp, err := clientFrom("127.0.0.2").Post(srv.URL+"/cgi-bin/redis", "", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusInternalServerError, resp.StatusCode)
	assert.NotContains(t, string(body), "S3cret")
	assert.Contains(t, srv.ErrorLog(), "invalid userinfo", "the reason is logged")
	assert.NotContains(t, srv.ErrorLog(), "S3cret", "without the password")
}

func TestCGIOutsideACGIServerExits2(t *testing.T) {
	t.Setenv("GATEWAY_INTERFACE", "")
	os.Unsetenv("GATEWAY_INTERFACE")
	code, out, errOut := cli("cgi", "-store", "memory")
	assert.Equal(t, 2, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "not under a CGI server")
}

// The finding: ratelab cgi with a database store never created its
// tables, so every hit failed open — 40 of 40 allowed on a fresh
// database, `r=29` on every answer. Each CGI process now prepares its
// store as serve does at start.
func TestCGIPreparesTheDatabase(t *testing.T) {
	for _, db := range []struct {
		store  string
		shared *sqlserver.Shared
	}{{"mysql", mariadb}, {"postgres", postgres}} {
		t.Run(db.store, func(t *testing.T) {
			dsn := db.shared.Database(t)
			srv := lighttpdserver.ForTest(t, map[string]string{
				"db": wrapper(t, fmt.Sprintf("-store %s -%s '%s' -limit 30 -window 1h", db.store, db.store, dsn)),
			})
			var got, want []string
			for i := range 32 {
				resp, err := clientFrom("127.0.0.2").Post(srv.URL+"/cgi-bin/db", "", nil)
				require.NoError(t, err)
				resp.Body.Close()
				// The window's end, t, counts down on the real clock: only the
				// status and what remains are exact.
				got = append(got, fmt.Sprint(resp.StatusCode, " ", strings.Split(resp.Header.Get("RateLimit"), ";t=")[0]))
				status := map[bool]int{true: 200, false: 429}[i < 30]
				want = append(want, fmt.Sprintf(`%d "demo-start";r=%d`, status, max(29-i, 0)))
			}
			assert.Equal(t, want, got, "error log: %s", srv.ErrorLog())
			assert.NotContains(t, srv.ErrorLog(), "not counted")
		})
	}
}

// What file-store.md says of lighttpd: it hands a header named with
// underscores to a CGI program as it does the same name with hyphens, so
// behind it a client's X_Forwarded_For can stand in for the X-Forwarded-For
// a trusted proxy wrote. This test pins that behaviour of the lighttpd
// installed; if it fails, lighttpd changed and the page must too.
func TestLighttpdPassesUnderscoredHeaders(t *testing.T) {
	srv := lighttpdserver.ForTest(t, map[string]string{
		"xff": wrapper(t, "-store file -dir "+t.TempDir()+" -limit 3 -window 1h -trusted-proxies 127.0.0.0/8 -forwarded-header X-Forwarded-For"),
	})
	allowed := 0
	for i := range 6 {
		req, err := http.NewRequest("POST", srv.URL+"/cgi-bin/xff", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		req.Header["X_Forwarded_For"] = []string{fmt.Sprintf("198.51.100.%d", i)}
		resp, err := clientFrom("127.0.0.2").Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			allowed++
		}
	}
	assert.Greater(t, allowed, 3, "6 requests at a limit of 3: lighttpd let the client's header through; error log: %s", srv.ErrorLog())
}

// The attacker's finding: a CGI environment the request cannot be read
// from (a protocol that is none, a length that is no number) got no
// answer at all — exit 1, nothing on stdout or stderr, and the web server
// made a 500 of it. It is answered 400, with the reason in the error log.
func TestCGIAnswersAMalformedRequest400(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, env := range [][]string{
		{"SERVER_PROTOCOL=junk"},
		{"REQUEST_METHOD=POST", "CONTENT_LENGTH=abc"},
		{"REQUEST_URI=%zz"},
	} {
		t.Run(strings.Join(env, " "), func(t *testing.T) {
			cmd := exec.Command(exe, "cgi", "-store", "memory")
			cmd.Env = append(append(os.Environ(), envRunCLI+"=1", "GATEWAY_INTERFACE=CGI/1.1", "REQUEST_METHOD=GET",
				"REMOTE_ADDR=192.0.2.1", "SERVER_PROTOCOL=HTTP/1.1", "REQUEST_URI=/"), env...)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			assert.True(t, strings.HasPrefix(stdout.String(), "Status: 400 Bad Request\r\n"), "stdout: %q", stdout.String())
			assert.Contains(t, stderr.String(), "ratelab cgi: ")
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
		})
	}
}

// The attacker's finding at 0574388: a connection string or a directory
// cgi cannot use, found as it opened the store, exited 1 where the page
// promises a configuration error's exit 2 (serve and hit gave 2). The
// answer is 500 all the same.
func TestCGIConfigurationErrorsExit2(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, args := range [][]string{
		{"-store", "mysql", "-mysql", "app:s@tcp(127.0.0.1:99999)/app"},
		{"-store", "redis", "-redis", "http://127.0.0.1:1/0"},
		{"-store", "postgres", "-postgres", "postgres://u:s@127.0.0.1:99999/d"},
		{"-store", "file", "-dir", filepath.Join(t.TempDir(), "missing")},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(exe, append([]string{"cgi"}, args...)...)
			cmd.Env = append(os.Environ(), envRunCLI+"=1", "GATEWAY_INTERFACE=CGI/1.1", "REQUEST_METHOD=POST",
				"REMOTE_ADDR=192.0.2.1", "SERVER_PROTOCOL=HTTP/1.1", "REQUEST_URI=/demo")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if assert.ErrorAs(t, err, &exit) {
				assert.Equal(t, 2, exit.ExitCode(), "stderr: %q", stderr.String())
			}
			assert.True(t, strings.HasPrefix(stdout.String(), "Status: 500 Internal Server Error\r\n"), "stdout: %q", stdout.String())
			assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
		})
	}
}
