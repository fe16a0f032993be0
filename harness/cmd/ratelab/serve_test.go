package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/lab/redisserver"
)

// startServe runs ratelab serve in a shell line (so that a test can set
// ulimit first) and returns the URL it prints, or its exit code if it
// exits first, and what it writes to stderr. Its stdout and stderr are one
// pipe, so that whatever it writes before the URL — a warning of its
// checks — is in stderr when startServe returns: two pipes, each copied
// by a goroutine of its own, let a busy machine hand the URL over first.
func startServe(t *testing.T, shellPrefix string, args ...string) (url string, code int, stderr *syncbuf.Buffer) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command("sh", append([]string{"-c", shellPrefix + `exec "$0" "$@"`, exe, "serve"}, args...)...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	pw.Close() // the child has its own
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait(); pr.Close() })
	stderr = new(syncbuf.Buffer)
	out := bufio.NewReader(pr)
	for {
		line, err := out.ReadString('\n')
		if err != nil { // it exited before printing a URL
			io.WriteString(stderr, line)
			cmd.Wait()
			return "", cmd.ProcessState.ExitCode(), stderr
		}
		if strings.HasPrefix(line, "http://") {
			go io.Copy(stderr, out)
			return strings.TrimSpace(line), 0, stderr
		}
		io.WriteString(stderr, line)
	}
}

// The finding: with a 256-descriptor limit, 300 idle connections made the
// server stop answering new requests. The front now closes the connection
// idle longest when it holds its share of descriptors.
func TestServeAnswersWithHundredsOfIdleConnectionsUnderALowLimit(t *testing.T) {
	url, code, stderr := startServe(t, "ulimit -n 256 && ", "-model", "single", "-store", "memory", "-limit", "100000", "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
	addr := strings.TrimPrefix(strings.TrimSuffix(url, "/demo"), "http://")
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range 300 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err, "connection %d", i)
		conns = append(conns, c)
		// Each makes a request and stays open between requests, which
		// only the 30 s idle timeout would end.
		fmt.Fprintf(c, "POST /demo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
			resp.Body.Close()
		}
	}
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Post(url, "", nil)
	require.NoError(t, err, "a new client must be answered; stderr: %s", stderr.String())
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// Configuration errors are found before the URL is printed: exit 2 and
// one line. An unreachable Redis is an outage: a warning, and serve runs.
func TestServeConfigErrorsExit2BeforeTheURL(t *testing.T) {
	url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "file", "-dir", "/nonexistent/ratelab")
	assert.Empty(t, url)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "does not exist")

	// Port 1 refuses: a Redis that is down. (A port freed a moment ago
	// could be taken by a test server of another package meanwhile.)
	url, _, stderr = startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", "redis://127.0.0.1:1/0", "-addr", "127.0.0.1:0")
	assert.NotEmpty(t, url, "an unreachable Redis is an outage, not a configuration error")
	// The warning was written before the URL; its pipe may deliver it later.
	assert.Eventually(t, func() bool { return strings.Contains(stderr.String(), "unreachable") }, 5*time.Second, time.Millisecond,
		"stderr: %s", stderr.String())
}

// A Redis that answers but refuses the URL's password or database is a
// configuration error too: exit 2 before the URL.
func TestServeRedisRefusalsExit2BeforeTheURL(t *testing.T) {
	redisserver.Need(t)
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	require.NoError(t, c.ConfigSet(context.Background(), "requirepass", "sesame").Err())
	for _, u := range []string{"redis://:wrong@" + srv.Addr + "/0", "redis://:sesame@" + srv.Addr + "/99"} {
		url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", u, "-addr", "127.0.0.1:0")
		assert.Empty(t, url, u)
		assert.Equal(t, 2, code, "%s: %s", u, stderr.String())
		assert.Contains(t, stderr.String(), "refused", u)
	}
}

// The findings: serve accepted a state directory it could not write —
// printed its URL and let 6 of 6 through — and an address it could not
// listen on was found only after the workers had started (exit 1). Both
// are configuration errors: exit 2 before the URL, no process started.
func TestServeRefusesWhatItCannotUse(t *testing.T) {
	t.Run("a port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		url, code, stderr := startServe(t, "", "-model", "pool", "-store", "memory", "-addr", ln.Addr().String())
		assert.Empty(t, url)
		assert.Equal(t, 2, code, stderr.String())
		assert.Contains(t, stderr.String(), "address already in use")
		assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr.String()), "\n")+1, "one line: %s", stderr.String())
	})
	t.Run("a state directory it cannot write", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if os.Geteuid() != 0 || err != nil {
			t.Skip("needs root and setpriv (util-linux) to run serve as nobody")
		}
		// As nobody, over a directory of root's that nobody may read but
		// not write; the binary is copied where nobody can run it.
		base := t.TempDir()
		require.NoError(t, os.Chmod(base, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(base), 0o755))
		exe, err := os.Executable()
		require.NoError(t, err)
		b, err := os.ReadFile(exe)
		require.NoError(t, err)
		copied := filepath.Join(base, "ratelab.test")
		require.NoError(t, os.WriteFile(copied, b, 0o755))
		state := filepath.Join(base, "state")
		require.NoError(t, os.MkdirAll(filepath.Join(state, "rate-limits"), 0o755))
		cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", copied,
			"serve", "-model", "pool", "-store", "file", "-dir", state, "-addr", "127.0.0.1:0")
		cmd.Env = append(os.Environ(), envRunCLI+"=1")
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%s", out)
		assert.Equal(t, 2, exit.ExitCode(), "%s", out)
		assert.Contains(t, string(out), "permission denied")
		assert.Contains(t, string(out), "is not writable")
		assert.NotContains(t, string(out), "http://", "no URL printed")
	})
}

// The finding: behind a trusted proxy, a client-sent Forwarded header
// picked the bucket — a fresh one per request. With the one header the
// proxies write named, a client that adds the other keeps its bucket,
// under a pool (the front reads it) and under CGI (each process does).
func TestServeBehindATrustedProxy(t *testing.T) {
	for _, model := range []string{"pool", "cgi"} {
		t.Run(model, func(t *testing.T) {
			url, code, stderr := startServe(t, "", "-model", model, "-store", "file", "-limit", "3", "-addr", "127.0.0.1:0",
				"-trusted-proxies", "127.0.0.0/8", "-forwarded-header", "X-Forwarded-For")
			require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
			post := func(xff, fwd string) int {
				req, err := http.NewRequest("POST", url, nil)
				require.NoError(t, err)
				req.Header.Set("X-Forwarded-For", xff)
				req.Header.Set("Forwarded", fwd)
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				return resp.StatusCode
			}
			var got []int
			for i := range 4 {
				got = append(got, post("203.0.113.9", fmt.Sprintf("for=198.51.100.%d", i)))
			}
			assert.Equal(t, []int{200, 200, 200, 429}, got, "the Forwarded header the client sent is never read")
			assert.Equal(t, 200, post("203.0.113.10", "for=unknown"), "another address the proxy passed on: another bucket")
		})
	}
	_, code, stderr := startServe(t, "", "-model", "pool", "-store", "memory", "-trusted-proxies", "127.0.0.0/8", "-addr", "127.0.0.1:0")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "no Header", "trusted proxies without the header they write: %s", stderr.String())
}

// The finding: serve -model cgi with a relative -dir checked the directory
// it was given, then its CGI processes — which run in the temporary
// directory — kept their state in another one of that name there. Every
// process now uses the directory that was checked.
func TestServeCGIWithARelativeDir(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(base, "state"), 0o700))
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "serve", "-model", "cgi", "-store", "file", "-dir", "state", "-limit", "2", "-addr", "127.0.0.1:0")
	cmd.Dir, cmd.Env = base, append(os.Environ(), envRunCLI+"=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGINT); cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	var got []int
	for range 3 {
		resp, err := http.Post(strings.TrimSpace(url), "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 429}, got)
	files, _ := filepath.Glob(filepath.Join(base, "state", "rate-limits", "*.json"))
	assert.Len(t, files, 1, "the state is in the directory given, relative to where serve ran")
}

// The finding: under CGI, a header X_Forwarded_For reaches the program as
// HTTP_X_FORWARDED_FOR, the variable X-Forwarded-For becomes, and could
// replace the address a trusted proxy wrote — a fresh bucket for most
// requests. serve's CGI host drops headers with underscores, as Apache
// and nginx do.
func TestServeCGIDropsUnderscoredHeaders(t *testing.T) {
	url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "file", "-limit", "3", "-addr", "127.0.0.1:0",
		"-trusted-proxies", "127.0.0.0/8", "-forwarded-header", "X-Forwarded-For")
	require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
	var got []int
	for i := range 8 {
		req, err := http.NewRequest("POST", url, nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-For", "203.0.113.9")                          // as the proxy wrote it
		req.Header["X_Forwarded_For"] = []string{fmt.Sprintf("198.51.100.%d", i)} // as the client sent it
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 429, 429, 429, 429, 429}, got)
}

// The finding: a Redis that evicts keys resets counts silently, and an
// out-of-memory Redis answers PING. serve refuses both before printing its
// URL (exit 2); -redis-allow-eviction accepts eviction, with one warning.
func TestServeRefusesARedisThatMayEvictOrRefusesWrites(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		srv := redisserver.ForTest(t, "--maxmemory", "3mb", "--maxmemory-policy", policy)
		args := []string{"-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0"}
		url, code, stderr := startServe(t, "", args...)
		assert.Empty(t, url, policy)
		assert.Equal(t, 2, code, "%s: %s", policy, stderr.String())
		assert.Contains(t, stderr.String(), "maxmemory-policy "+policy, policy)

		url, code, stderr = startServe(t, "", append(args, "-redis-allow-eviction")...)
		require.NotEmpty(t, url, "%s with -redis-allow-eviction: serve exited %d: %s", policy, code, stderr.String())
		assert.Eventually(t, func() bool { return strings.Contains(stderr.String(), "warning") }, 5*time.Second, time.Millisecond)
		assert.Equal(t, 1, strings.Count(stderr.String(), "warning:"), "one warning: %s", stderr.String())
		assert.Contains(t, stderr.String(), "maxmemory-policy "+policy, policy)
	}

	srv := redisserver.ForTest(t, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "noeviction: serve exited %d: %s", code, stderr.String())
	assert.NotContains(t, stderr.String(), "warning")

	c := srv.Client()
	defer c.Close()
	require.NoError(t, c.ConfigSet(context.Background(), "maxmemory", "1").Err()) // full: every write is OOM
	url, code, stderr = startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0")
	assert.Empty(t, url)
	assert.Equal(t, 2, code, stderr.String())
	assert.Contains(t, stderr.String(), "refuses writes")
}

// -redis-wait reaches the store of every process: with no replica to
// confirm them, fail-closed refuses every hit (503), and fail-open decides
// each on the primary's count, which counted it.
func TestServeRedisWait(t *testing.T) {
	srv := redisserver.ForTest(t)
	for _, tt := range []struct {
		fail string
		want []int
	}{
		{"closed", []int{503, 503, 503}},
		{"open", []int{200, 200, 429}},
	} {
		url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-limit", "2",
			"-redis-wait", "1", "-redis-wait-timeout", "20ms", "-fail", tt.fail, "-addr", "127.0.0.1:0")
		require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
		var got []int
		for range 3 {
			resp, err := http.Post(url, "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		assert.Equal(t, tt.want, got, "-fail %s", tt.fail)
		c := srv.Client()
		require.NoError(t, c.FlushAll(context.Background()).Err())
		c.Close()
	}
	_, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-redis-wait", "1", "-redis-wait-timeout", "5s")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "must be shorter than Timeout", stderr.String())
}

// The finding: serve's own hint sent 35 requests, which in the pool model
// of the in-memory store (4 workers × 30 let through) never met a 429.
// The hint now sends as many as the model lets through and five more, and
// says what to expect; each row sends what its hint says and sees that.
func TestServesHintReachesWhatItSays(t *testing.T) {
	tests := []struct {
		args     []string
		want200  int // of the hint's requests
		wantSeq  int
		wantFail bool   // the banner names a fail policy
		expect   string // the banner's expect line starts so
	}{
		{[]string{"-model", "pool", "-workers", "3", "-store", "memory", "-limit", "4"}, 12, 17, false, "3 workers × 4 = 12 let through"},
		{[]string{"-model", "cgi", "-store", "memory", "-limit", "4"}, 9, 9, false, "never 429"},
		{[]string{"-model", "pool", "-workers", "3", "-store", "file", "-limit", "4"}, 4, 9, true, "4 let through in every model"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			url, code, stderr := startServe(t, "", append(tt.args, "-addr", "127.0.0.1:0")...)
			require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
			require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "Ctrl-C stops it") }, time.Minute, 10*time.Millisecond)
			banner := stderr.String()
			assert.Equal(t, tt.wantFail, strings.Contains(banner, ", fail "), "banner %q names a fail policy", banner)
			var n int
			_, err := fmt.Sscanf(banner[strings.Index(banner, "$(seq ")+len("$(seq "):], "%d)", &n)
			require.NoError(t, err, "banner %q", banner)
			assert.Equal(t, tt.wantSeq, n, "requests in the hint %q", banner)
			ok := 0
			for range n {
				resp, err := http.Post(url, "", nil)
				require.NoError(t, err)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok++
				}
			}
			assert.Equal(t, tt.want200, ok, "200s of the hint's %d requests; banner %q", n, banner)
			assert.Contains(t, banner, "\nexpect: "+tt.expect)
		})
	}
}

// serve's state directory, when it makes its own (no -dir), is removed
// when it stops — interrupted, or hung up as when its terminal closes (the
// attacker's finding: SIGHUP left it behind) — and its banner says so,
// and that a kill -9, which no process can clean up after, leaves it; a
// -dir given is the user's, kept, and the banner says nothing of removing
// it.
func TestServeSaysWhichStateDirectoryItRemoves(t *testing.T) {
	given := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.Mkdir(given, 0o700))
	for _, tc := range []struct {
		name      string
		args      []string
		own, left bool // the banner's note; the directory after serve ends
		sig       syscall.Signal
	}{
		{"its own", nil, true, false, syscall.SIGINT},
		{"its own, hung up", nil, true, false, syscall.SIGHUP},
		{"its own, killed", nil, true, true, syscall.SIGKILL},
		{"given", []string{"-dir", given}, false, true, syscall.SIGINT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exe, err := os.Executable()
			require.NoError(t, err)
			cmd := exec.Command(exe, append([]string{"serve", "-model", "single", "-store", "file", "-addr", "127.0.0.1:0"}, tc.args...)...)
			cmd.Env = append(os.Environ(), envRunCLI+"=1", "TMPDIR="+t.TempDir())
			stderr, err := cmd.StderrPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			out := bufio.NewReader(stderr)
			line, err := out.ReadString('\n') // the banner's first line
			require.NoError(t, err)
			_, named, ok := strings.Cut(line, "state in ")
			require.True(t, ok, "banner %q names no state directory", line)
			dir, note, _ := strings.Cut(named, " ")
			dir = strings.TrimSuffix(strings.TrimSpace(dir), ";")
			assert.Equal(t, tc.own, strings.Contains(note, "(removed when serve stops; a kill -9 leaves it)"), "banner %q", line)
			assert.DirExists(t, dir, "while serve runs")

			require.NoError(t, cmd.Process.Signal(tc.sig))
			io.Copy(io.Discard, out) // to its end: serve and its processes have exited
			if err := cmd.Wait(); tc.sig != syscall.SIGKILL {
				require.NoError(t, err)
			}
			if tc.left {
				assert.DirExists(t, dir, "after serve ended, as its banner says")
			} else {
				assert.NoDirExists(t, dir, "after serve stopped, as its banner says")
			}
		})
	}
}

// The attacker's finding: -addr :8080 listened on every interface without
// a word. It still does (a workshop may want it), and says so first.
func TestServeWarnsOfAnAddressBeyondLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr string
		warn bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		url, _, stderr := startServe(t, "", "-model", "single", "-store", "memory", "-addr", tt.addr)
		require.NotEmpty(t, url, "stderr: %s", stderr.String())
		assert.Equal(t, tt.warn, strings.Contains(stderr.String(), "beyond loopback"), "-addr %s: stderr %q", tt.addr, stderr.String())
	}
}

// The newcomer's finding: with -algorithm gcra -burst 3 on a pool of 4,
// the banner expected 4 × 30 = 120 let through, and the try loop got 12:
// what comes at once is the burst. The banner names the algorithm too.
func TestBannerExpectsTheBurstUnderGCRA(t *testing.T) {
	cfg := httphost.Config{Model: harness.Pool, Workers: 4, CGIProcs: 1,
		App: harness.App{Store: "memory", Limit: 30, Window: time.Hour, Algorithm: ratelab.GCRA, Burst: 3}}
	got := banner(cfg, "http://127.0.0.1:1/demo", false)
	for _, want := range []string{"limit 30 per 3600 s, gcra burst 3", "4 workers × 3 = 12 let through", "seq 17"} {
		assert.Contains(t, got, want)
	}
}
