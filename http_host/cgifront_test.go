package httphost_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// blockingCGI writes a CGI program that marks itself running in dir,
// notes how many were running then, and answers only once dir/go exists.
func blockingCGI(t *testing.T, dir string) string {
	exe := filepath.Join(dir, "prog")
	script := fmt.Sprintf(`#!/bin/sh
d=%q
mkdir "$d/run.$$"
ls -d "$d"/run.* 2>/dev/null | wc -l >> "$d/seen"
while [ ! -e "$d/go" ]; do sleep 0.01; done
rmdir "$d/run.$$"
printf 'Content-Type: text/plain\r\n\r\nok'
`, dir)
	require.NoError(t, os.WriteFile(exe, []byte(script), 0o700))
	return exe
}

// release lets blockingCGI's programs in dir answer.
func release(t *testing.T, dir string) {
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Error(err)
	}
}

// The CGI front runs at most Config.CGIProcs programs at once, as a shared
// host caps an account's entry processes; the requests over it wait their
// turn and are served when a program ends. Without the cap, 200 requests
// at once ran 200 programs and on a busy two-core machine 1992 of 2000
// PostgreSQL hits ran out of time (TestLoadIsNotAnOutage in CI).
func TestCGIFrontRunsAtMostItsPrograms(t *testing.T) {
	dir := t.TempDir()
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, CGIProcs: 3, Exe: blockingCGI(t, dir),
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	t.Cleanup(func() { release(t, dir) }) // first, should the test end early
	var wg sync.WaitGroup
	codes := make(chan int, 5)
	for range 5 {
		wg.Go(func() {
			resp, err := http.Post(h.URL, "text/plain", nil)
			if !assert.NoError(t, err) {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	running := func() int { m, _ := filepath.Glob(filepath.Join(dir, "run.*")); return len(m) }
	require.NoError(t, poll.Until(time.Minute, 5*time.Millisecond, func() error {
		if n, w := running(), h.CGIWaiting(); n != 3 || w != 2 {
			return fmt.Errorf("running %d, waiting %d; want 3 and 2", n, w)
		}
		return nil
	}))
	assert.Equal(t, 3, running(), "programs running with 2 requests waiting")
	release(t, dir)
	wg.Wait()
	close(codes)
	for c := range codes {
		assert.Equal(t, http.StatusOK, c)
	}
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	require.NoError(t, err)
	fields := strings.Fields(string(seen))
	assert.Len(t, fields, 5, "programs run")
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		assert.NoError(t, err)
		assert.LessOrEqual(t, n, 3, "programs running at once, as each saw: %s", seen)
	}
}

// A request that waits longer than Timeouts.Worker for a program is
// answered 503 with a Retry-After, no program runs for it, and the
// refusal is logged.
func TestCGIFrontRefusesAfterItsWait(t *testing.T) {
	dir := t.TempDir()
	to := httphost.DefaultTimeouts()
	to.Worker = 100 * time.Millisecond
	logs := &syncbuf.Buffer{}
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, CGIProcs: 1, Timeouts: to, Exe: blockingCGI(t, dir), Stderr: logs,
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	t.Cleanup(func() { release(t, dir) })
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(h.URL, "text/plain", nil)
		if assert.NoError(t, err) {
			resp.Body.Close()
			first <- resp.StatusCode
		}
	}()
	running := func() int { m, _ := filepath.Glob(filepath.Join(dir, "run.*")); return len(m) }
	require.NoError(t, poll.Until(time.Minute, 5*time.Millisecond, func() error {
		if n := running(); n != 1 {
			return fmt.Errorf("running %d, want 1", n)
		}
		return nil
	}))
	client := &http.Client{Timeout: 30 * time.Second} // a program started for it would never end
	resp, err := client.Post(h.URL, "text/plain", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Contains(t, logs.String(), "front: 1 request(s) waited 100ms for one of the 1 CGI programs and were answered 503")
	release(t, dir)
	assert.Equal(t, http.StatusOK, <-first)
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	require.NoError(t, err)
	assert.Equal(t, "1", strings.TrimSpace(string(seen)), "programs run: one, for the first request")
}

// Config.CGIProcs is checked before anything starts.
func TestCGIProcsOutOfRange(t *testing.T) {
	for _, n := range []int{-1, httphost.MaxCGIProcs + 1} {
		_, err := httphost.Start(httphost.Config{Model: harness.CGI, CGIProcs: n,
			App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
		assert.ErrorContains(t, err, "CGI programs at once", "CGIProcs %d", n)
	}
}

// A client that trickles its body holds a connection, not one of the CGI
// front's programs: the front reads a body whole before the request waits
// for a program, as nginx buffers one. A body over MaxBody is answered
// 413 and runs no program.
func TestCGIFrontReadsTheBodyBeforeAProgram(t *testing.T) {
	dir := t.TempDir()
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, CGIProcs: 1, Exe: blockingCGI(t, dir),
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	release(t, dir) // the programs answer at once
	u, err := url.Parse(h.URL)
	require.NoError(t, err)
	slow, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer slow.Close()
	_, err = fmt.Fprintf(slow, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 10\r\n\r\nx", u.Path, u.Host)
	require.NoError(t, err)

	client := &http.Client{Timeout: 20 * time.Second} // the slow body's read time is 30 s
	resp, err := client.Post(h.URL, "text/plain", strings.NewReader("a body"))
	require.NoError(t, err, "a request beside a trickled body")
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, err = client.Post(h.URL, "text/plain", bytes.NewReader(make([]byte, httphost.MaxBody+1)))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	require.NoError(t, err)
	assert.Equal(t, "1", strings.TrimSpace(string(seen)), "programs run: one, for the request with a whole body")
}

// A chunked body is read whole and passed on with its length — net/http/cgi
// refuses a chunked one — and a declared length over MaxBody is refused
// at once, before the client sends it: no 100 Continue.
func TestCGIFrontPassesChunkedBodiesAndRefusesLongOnes(t *testing.T) {
	dir := t.TempDir()
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, Exe: blockingCGI(t, dir),
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	release(t, dir)
	req, err := http.NewRequest("POST", h.URL, io.MultiReader(strings.NewReader("hello"))) // no length: chunked
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a chunked body: %s", body)

	u, err := url.Parse(h.URL)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", u.Path, u.Host, httphost.MaxBody+1)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 413 Request Entity Too Large\r\n", status)
}

// The bodies the CGI front holds at once are bounded, all clients
// together: 33 clients each sending all but the last byte of a 1 MiB body
// would hold 33 MiB; a body that would pass MaxBodies is refused (two
// crossing it at once may both be), while the others wait for their last
// byte.
func TestCGIFrontBoundsTheBodiesItHolds(t *testing.T) {
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, Exe: blockingCGI(t, t.TempDir()),
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	u, err := url.Parse(h.URL)
	require.NoError(t, err)
	n := httphost.MaxBodies/httphost.MaxBody + 1
	part := make([]byte, httphost.MaxBody-1)
	var wg sync.WaitGroup
	for range n {
		conn, err := net.Dial("tcp", u.Host)
		require.NoError(t, err)
		t.Cleanup(func() { conn.Close() })
		wg.Go(func() {
			fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", u.Path, u.Host, httphost.MaxBody)
			conn.Write(part) // a refused one's write may fail
		})
	}
	wg.Wait()
	// Every byte sent is read, or its body refused.
	require.NoError(t, poll.Until(time.Minute, 5*time.Millisecond, func() error {
		held, refused := h.Bodies()
		if refused == 0 || held != (int64(n)-refused)*int64(len(part)) {
			return fmt.Errorf("%d bytes held, %d bodies refused; want %d bytes of %d clients, the rest refused",
				held, refused, int64(len(part))*(int64(n)-refused), n)
		}
		return nil
	}))
}

// roundTrip sends req, raw, on a connection of its own to addr, half-closes
// it if cut, and returns the answer's status, Content-Type and body.
func roundTrip(t *testing.T, addr, req string, cut bool) (code int, ctype, body string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, req)
	require.NoError(t, err)
	if cut {
		require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	}
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// programsRun counts the blockingCGI programs that ran in dir.
func programsRun(t *testing.T, dir string) int {
	t.Helper()
	seen, err := os.ReadFile(filepath.Join(dir, "seen"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return len(strings.Fields(string(seen)))
}

// The attacker's finding (#44): POST /demo%00x was answered 500, "cgi
// host: CGI error: exec: environment variable contains NUL" — the path
// goes to the program's environment decoded, and os/exec refuses a NUL
// there. The front now refuses a request with a NUL in any value of the
// environment with 400 and a short plain-text body, and starts no
// program. A %00 in the query stays escaped in QUERY_STRING, and a NUL
// in a header is refused by net/http before the front sees it.
func TestCGIFrontRefusesANULBeforeAProgram(t *testing.T) {
	dir := t.TempDir()
	logs := &syncbuf.Buffer{}
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, Exe: blockingCGI(t, dir), Stderr: logs,
		App: harness.App{Store: harness.File, Dir: t.TempDir(), Limit: 30, Window: time.Minute}})
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	release(t, dir)
	u, err := url.Parse(h.URL)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, target, host, header string
		want, programs             int
	}{
		{"a NUL in the path", "/demo%00x", u.Host, "", http.StatusBadRequest, 0},
		{"a NUL in the path's last segment", "/demo/%00", u.Host, "", http.StatusBadRequest, 0},
		{"a NUL in a header", "/demo", u.Host, "X-A: a\x00b\r\n", http.StatusBadRequest, 0},
		{"a NUL in the Host", "/demo", "a\x00b", "", http.StatusBadRequest, 0},
		{"a NUL in the query, escaped", "/demo?x=%00", u.Host, "", http.StatusOK, 1},
		{"a NUL in the Host, escaped", "/demo", "a%00b", "", http.StatusOK, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := programsRun(t, dir)
			req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n", tc.target, tc.host, tc.header)
			code, ctype, body := roundTrip(t, u.Host, req, false)
			assert.Equal(t, tc.want, code, "status; body %q", body)
			assert.Equal(t, tc.programs, programsRun(t, dir)-before, "programs run")
			if tc.want == http.StatusBadRequest {
				assert.True(t, strings.HasPrefix(ctype, "text/plain"), "Content-Type %q", ctype)
				assert.Less(t, len(body), 200, "body %q", body)
			}
		})
	}
	assert.NotContains(t, logs.String(), "CGI error", "the CGI host's log")
}
