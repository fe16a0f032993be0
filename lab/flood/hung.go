package flood

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// Figures are what Hung measured.
type Figures struct {
	FirstAtOnce time.Duration // from the hang to the first request the policy let through at once
	PerSecond   float64       // requests answered a second while the store hung, 8 clients at a time
	Recovery    time.Duration // from the store's waking to the first request counted again
}

// String says the figures in a sentence, for the test's log.
func (f Figures) String() string {
	return fmt.Sprintf("first let through at once %v after the hang; %.0f requests answered a second while hung; counted again %v after the wake",
		f.FirstAtOnce.Round(10*time.Millisecond), f.PerSecond, f.Recovery.Round(10*time.Millisecond))
}

// Hung serves a under model, fail-open, hangs its store with pause, and
// checks what the policy promises: once the front's breaker has seen the
// store not answer, each request is let through at once, uncounted; when
// the store wakes, requests are counted again, and a new client gets
// exactly Limit. It returns what it measured.
func Hung(t *testing.T, a harness.App, model harness.Model, workers int, exe string, pause func() (resume func() error, err error)) Figures {
	t.Helper()
	a.Limit, a.Window, a.FailPolicy = Limit, time.Hour, ratelab.FailOpen
	logs := &syncbuf.Buffer{Limit: 1 << 20}
	h, err := httphost.Start(httphost.Config{Model: model, App: a, Workers: workers, Exe: exe, Stderr: logs})
	require.NoError(t, err)
	defer func() { assert.NoError(t, h.Close(), "logs: %.3000s", logs.String()) }()
	c := newClient("127.0.0.1")
	require.True(t, c.post(t, h.URL).counted, "a request before the hang is counted")

	resume, err := pause()
	require.NoError(t, err)
	resumed := false
	defer func() {
		if !resumed {
			resume()
		}
	}()
	var f Figures
	f.FirstAtOnce = c.until(t, h.URL, func(r answer) bool { return r.code == http.StatusOK && !r.counted && r.took < 250*time.Millisecond }, logs)
	f.PerSecond = c.whileHung(t, h.URL)

	require.NoError(t, resume())
	resumed = true
	f.Recovery = c.until(t, h.URL, func(r answer) bool { return r.counted }, logs)
	fresh := newClient("127.0.0.2") // a key the hits of the hang never touched
	var codes []int
	for range Limit + 5 {
		codes = append(codes, fresh.post(t, h.URL).code)
	}
	want := append(slices.Repeat([]int{http.StatusOK}, Limit), slices.Repeat([]int{http.StatusTooManyRequests}, 5)...)
	assert.Equal(t, want, codes, "a new client after the wake: exactly %d allowed", Limit)
	t.Logf("%s, %s: %v", a.Store, model, f)
	return f
}

// answer is what one request got.
type answer struct {
	code    int
	counted bool // it carried a RateLimit field: the store counted it
	took    time.Duration
}

type client struct{ http *http.Client }

// newClient returns a client whose connections come from the loopback
// address from, one a request.
func newClient(from string) client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	return client{&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}}
}

func (c client) post(t *testing.T, url string) answer {
	start := time.Now()
	resp, err := c.http.Post(url, "text/plain", strings.NewReader(""))
	require.NoError(t, err)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return answer{code: resp.StatusCode, counted: resp.Header.Get("RateLimit") != "", took: time.Since(start)}
}

// until sends one request at a time until one satisfies ok, within 30 s,
// and returns how long that took.
func (c client) until(t *testing.T, url string, ok func(answer) bool, logs *syncbuf.Buffer) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 30*time.Second {
		if ok(c.post(t, url)) {
			return time.Since(start)
		}
	}
	t.Fatalf("no such answer in 30 s; logs: %.3000s", logs.String())
	return 0
}

// whileHung sends requests from 8 clients at a time for a second and
// returns how many were answered a second; each must be let through
// uncounted.
func (c client) whileHung(t *testing.T, url string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var mu sync.Mutex
	n := 0
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				r := c.post(t, url)
				assert.Equal(t, answer{code: http.StatusOK}, answer{code: r.code, counted: r.counted}, "a request while the store hangs, fail-open")
				mu.Lock()
				n++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return float64(n) / time.Since(start).Seconds()
}
