package httphost_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// clientFrom returns an HTTP client whose connections come from the
// loopback address src, as a distinct client would.
func clientFrom(src string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}

func post(t *testing.T, c *http.Client, url string, hdr ...string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// The finding: behind the front every client shared one bucket, because
// the workers keyed on the front's address. Three requests from 127.0.0.2
// with a limit of 3, then 127.0.0.3 must still be allowed — under every
// model with a front — and headers a client sends itself pick no bucket.
func TestEachClientItsOwnBucketBehindTheFront(t *testing.T) {
	for _, model := range []harness.Model{harness.Single, harness.Pool, harness.TwoHosts, harness.CGI} {
		t.Run(string(model), func(t *testing.T) {
			a := app(t, harness.File)
			a.Limit = 3
			h, err := httphost.Start(httphost.Config{Model: model, App: a, Workers: 2, Stderr: new(strings.Builder)})
			require.NoError(t, err)
			defer h.Close()
			two, three := clientFrom("127.0.0.2"), clientFrom("127.0.0.3")
			allowed := 3
			if model == harness.TwoHosts {
				allowed = 6 // each host has files of its own: the lesson of two hosts
			}
			for i := range allowed {
				require.Equal(t, http.StatusOK, post(t, two, h.URL), "127.0.0.2, request %d", i+1)
			}
			assert.Equal(t, http.StatusTooManyRequests, post(t, two, h.URL), "127.0.0.2, request %d", allowed+1)
			assert.Equal(t, http.StatusTooManyRequests, post(t, two, h.URL,
				"X-Ratelab-Client", "198.51.100.1", "X-Ratelab-Front", "guess", "X-Forwarded-For", "198.51.100.2"),
				"headers sent by the client must not pick a new bucket")
			assert.Equal(t, http.StatusOK, post(t, three, h.URL), "127.0.0.3 has a bucket of its own")
		})
	}
}

// Idle and slow clients are cut: an idle keep-alive connection is closed
// after the idle timeout, a body trickled slower than the read timeout is
// cut, and with more idle connections open than the server keeps, a new
// client is still answered at once.
func TestFrontCutsIdleAndSlowClients(t *testing.T) {
	to := httphost.DefaultTimeouts()
	to.ReadHeader, to.Read, to.Idle = 300*time.Millisecond, 600*time.Millisecond, 300*time.Millisecond
	h, err := httphost.Start(httphost.Config{Model: harness.Single, App: app(t, harness.Memory), Timeouts: to, Stderr: new(strings.Builder)})
	require.NoError(t, err)
	defer h.Close()
	addr := strings.TrimPrefix(strings.TrimSuffix(h.URL, "/demo"), "http://")

	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "POST /demo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		_, err = c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, io.EOF, "the server closes an idle connection")
		assert.Less(t, time.Since(start), 5*time.Second)
	})
	t.Run("trickled body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "POST /demo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
		start := time.Now()
		var werr error
		for i := 0; i < 100 && werr == nil; i++ {
			_, werr = c.Write([]byte("x"))
			time.Sleep(50 * time.Millisecond) // a slow client's pace, the thing under test
		}
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c)
		assert.Less(t, time.Since(start), 4*time.Second, "a 5 s trickle must be cut near the 600 ms read timeout")
	})
}

// serve's single worker counts its decisions by policy and outcome and
// serves them at /metrics in the Prometheus text format.
func TestMetricsAtSlashMetrics(t *testing.T) {
	for _, tt := range []struct {
		model harness.Model
		want  []string
	}{
		{harness.Single, []string{`ratelab_requests_total{policy="demo-start",outcome="allowed"} 2`, `ratelab_requests_total{policy="demo-start",outcome="throttled"} 1`}},
		// Under CGI the program that answers /metrics is new, and has
		// counted nothing (the newcomer's finding: the page did not say).
		{harness.CGI, []string{"# TYPE ratelab_requests_total counter"}},
	} {
		t.Run(string(tt.model), func(t *testing.T) {
			a := app(t, harness.Memory)
			a.Limit = 2
			h, err := httphost.Start(httphost.Config{Model: tt.model, App: a, Stderr: new(strings.Builder)})
			require.NoError(t, err)
			defer h.Close()
			c := clientFrom("127.0.0.2")
			for range 3 {
				post(t, c, h.URL)
			}
			resp, err := c.Get(strings.TrimSuffix(h.URL, "/demo") + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, w := range tt.want {
				assert.Contains(t, string(body), w)
			}
			if tt.model == harness.CGI {
				assert.NotContains(t, string(body), "ratelab_requests_total{", "a new process has counted nothing")
			}
		})
	}
}

// The attacker's finding (#44): a malformed chunked body was answered 502
// by the pool's front and counted against the worker, which had been sent
// the request's headers. A body is the client's to get right: the front
// now reads it whole before it picks a worker, as the CGI front and nginx
// do, and answers 400 itself, sending no worker anything and counting
// nothing against one.
func TestPoolFrontRefusesAMalformedChunkedBody(t *testing.T) {
	const head = "POST /demo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	for _, tc := range []struct {
		name, req string
		cut       bool // the client closes its side once it sent req
	}{
		{"a chunk size that is no number", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", false},
		{"a chunk longer than its size", head + "Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", false},
		{"chunks cut short", head + "Transfer-Encoding: chunked\r\n\r\n5\r\nhel", true},
		{"a body shorter than its length", head + "Content-Length: 10\r\n\r\nhel", true},
	} {
		for _, model := range []harness.Model{harness.Single, harness.Pool} {
			t.Run(tc.name+"/"+string(model), func(t *testing.T) {
				var log syncbuf.Buffer
				h, err := httphost.Start(httphost.Config{Model: model, Workers: 2, App: app(t, harness.Memory), Stderr: &log})
				require.NoError(t, err)
				closed := false
				t.Cleanup(func() {
					if !closed {
						h.Close()
					}
				})
				addr := strings.TrimPrefix(strings.TrimSuffix(h.URL, "/demo"), "http://")
				code, _, body := roundTrip(t, addr, tc.req, tc.cut)
				assert.Equal(t, http.StatusBadRequest, code, "status; body %q", body)
				assert.Equal(t, http.StatusOK, post(t, http.DefaultClient, h.URL), "a well-formed request after it")
				served, failed := h.Passed()
				assert.Equal(t, [2]int64{1, 0}, [2]int64{served, failed}, "requests passed to a worker, and failed")
				closed = true
				require.NoError(t, h.Close())
				assert.Equal(t, int64(1), h.Tally().Served, "requests the workers served")
				assert.NotContains(t, log.String(), "front: worker", "the front's log")
			})
		}
	}
}
