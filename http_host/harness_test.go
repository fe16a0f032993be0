package httphost_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/childproc"
)

// The test binary is also every child process: childproc.RunIfChild turns a
// re-executed copy into a worker or a CGI program before any test runs.
func TestMain(m *testing.M) {
	childproc.RunIfChild(httphost.Roles())
	os.Exit(m.Run())
}

func app(t *testing.T, store harness.StoreKind) harness.App {
	a := harness.App{Store: store, Limit: 30, Window: time.Hour}
	if store == harness.File {
		a.Dir = t.TempDir()
	}
	return a
}

// Every model × store, one by one and as a burst: the exact counts the
// lesson claims, at a limit of 10 (the lesson is the same at any limit;
// each CGI request is a process of this test binary).
func TestModelsAndStores(t *testing.T) {
	tests := []struct {
		model     harness.Model
		store     harness.StoreKind
		requests  int
		wantOK    int
		wantFirst int // first 429 when sent one by one; 0 for none
		wantProcs int
	}{
		{harness.Single, harness.Memory, 15, 10, 11, 1},
		{harness.Pool, harness.Memory, 25, 20, 21, 2},
		{harness.CGI, harness.Memory, 15, 15, 0, 15},
		{harness.Single, harness.File, 15, 10, 11, 1},
		{harness.Pool, harness.File, 25, 10, 11, 2},
		{harness.CGI, harness.File, 15, 10, 11, 15},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 8} {
			name := string(tt.model) + "/" + string(tt.store) + "/one-by-one"
			if conc > 1 {
				name = string(tt.model) + "/" + string(tt.store) + "/burst"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				a := app(t, tt.store)
				a.Limit = 10
				row, err := httphost.Run(context.Background(), httphost.Scenario{
					Model: tt.model, App: a, Workers: 2,
					Workload: httphost.Workload{Requests: tt.requests, Concurrency: conc},
				})
				require.NoError(t, err)
				assert.Equal(t, tt.wantOK, row.OK, "200s")
				assert.Equal(t, tt.requests-tt.wantOK, row.Throttled, "429s")
				assert.Equal(t, tt.wantProcs, row.Processes, "processes that answered")
				if conc == 1 {
					assert.Equal(t, tt.wantFirst, row.First429, "first 429")
				}
				if tt.wantFirst != 0 {
					// The window opened with the first request, at most Wall ago.
					assert.LessOrEqual(t, row.RetryAfter, 3600, "Retry-After of the first 429")
					assert.GreaterOrEqual(t, row.RetryAfter, 3600-int(row.Wall/time.Second)-1, "Retry-After of the first 429")
				}
				assert.Empty(t, row.Problems)
			})
		}
	}
}

// A child that fails loudly must fail the parent loudly, never pass in
// silence.
func TestChildFailuresAreLoud(t *testing.T) {
	quiet := new(strings.Builder)
	t.Run("worker exits before its ready line", func(t *testing.T) {
		a := harness.App{Store: harness.File, Dir: filepath.Join(t.TempDir(), "missing"), Limit: 30, Window: time.Hour}
		_, err := httphost.Start(httphost.Config{Model: harness.Single, App: a, Stderr: quiet})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "did not start")
		assert.Contains(t, err.Error(), "does not exist", "the child's stderr is in the error")
	})
	t.Run("binary that is not a ratelab child prints nothing", func(t *testing.T) {
		_, err := httphost.Start(httphost.Config{Model: harness.Pool, Workers: 2, App: app(t, harness.Memory), Exe: "/bin/true", Stderr: quiet})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "did not start")
	})
	t.Run("cgi child that crashes", func(t *testing.T) {
		h, err := httphost.Start(httphost.Config{Model: harness.CGI, App: app(t, harness.Memory), Exe: "/bin/false", Stderr: quiet})
		require.NoError(t, err)
		defer h.Close()
		_, err = httphost.Send(context.Background(), h.URL, httphost.Workload{Requests: 1, Concurrency: 1})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "unexpected 500")
	})
	t.Run("worker killed mid-run", func(t *testing.T) {
		h, err := httphost.Start(httphost.Config{Model: harness.Pool, Workers: 2, App: app(t, harness.Memory), Stderr: quiet})
		require.NoError(t, err)
		_, err = httphost.Send(context.Background(), h.URL, httphost.Workload{Requests: 4, Concurrency: 1})
		require.NoError(t, err)
		p, err := os.FindProcess(h.Pids()[1])
		require.NoError(t, err)
		require.NoError(t, p.Kill())
		err = h.Close()
		require.Error(t, err)
		// Whether the front saw the death before Close (and started
		// another worker) or not, the kill is named, with the pid.
		assert.Contains(t, err.Error(), fmt.Sprintf("worker pid %d", p.Pid))
		assert.Contains(t, err.Error(), "signal: killed")
	})
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  httphost.Config
		want string
	}{
		{"unknown model", httphost.Config{Model: "fpm", App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour}}, "unknown model"},
		{"unknown store", httphost.Config{Model: harness.Single, App: harness.App{Store: "apcu", Limit: 1, Window: time.Hour}}, "unknown store"},
		{"zero limit", httphost.Config{Model: harness.Single, App: harness.App{Store: harness.Memory, Window: time.Hour}}, "limit 0 must be from 1"},
		{"bad window", httphost.Config{Model: harness.Single, App: harness.App{Store: harness.Memory, Limit: 1}}, "whole number of seconds"},
		{"file without dir", httphost.Config{Model: harness.Single, App: harness.App{Store: harness.File, Limit: 1, Window: time.Hour}}, "needs a directory"},
		{"no workers", httphost.Config{Model: harness.Pool, App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour}}, "workers 0 must be from 1 to 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := httphost.Start(tt.cfg)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err := httphost.Send(context.Background(), "http://127.0.0.1:1/", httphost.Workload{Requests: 0, Concurrency: 1})
	assert.ErrorContains(t, err, "requests 0 must be positive")
}

// The demo's own verdict logic must fail a row whose counts are off, or a
// demo could never exit non-zero.
func TestRowFailsWhenCountsDiffer(t *testing.T) {
	s := httphost.Scenario{Model: harness.CGI, App: harness.App{Store: harness.Memory, Limit: 30, Window: time.Hour}, Workload: httphost.Workload{Requests: 40, Concurrency: 1}}
	ok, why := harness.Expect(s.Expected())
	assert.Equal(t, 40, ok)
	assert.Contains(t, why, "never 429")
	s.App.Store = harness.File
	ok, _ = harness.Expect(s.Expected())
	assert.Equal(t, 30, ok)
	s.Model, s.App.Store, s.Workers, s.Workload.Requests = harness.Pool, harness.Memory, 4, 130
	ok, _ = harness.Expect(s.Expected())
	assert.Equal(t, 120, ok)

	// A CGI scenario, run for real with the memory store (three requests,
	// three processes), then judged against a prediction of one fewer: it
	// must not pass.
	s = httphost.Scenario{Model: harness.CGI, App: app(t, harness.Memory), Workload: httphost.Workload{Requests: 3, Concurrency: 1}}
	row, err := httphost.Run(context.Background(), s)
	require.NoError(t, err)
	require.True(t, row.Pass(), "problems: %v", row.Problems)
	rep := httphost.Report{Store: "memory", Rows: []httphost.Row{row}}
	row.WantOK = 2
	rep.Rows = append(rep.Rows, httphost.Recheck(row))
	assert.False(t, rep.Pass())
	var out strings.Builder
	rep.Print(&out)
	assert.Contains(t, out.String(), "FAIL expected 2 allowed, saw 3")
}

// The workshop's login exercise: with a fail-closed file store, a request
// whose state cannot be reached gets 503, and recovers when it can.
func TestFailClosedServesServiceUnavailable(t *testing.T) {
	a := app(t, harness.File)
	a.FailPolicy = ratelab.FailClosed
	h, err := httphost.Start(httphost.Config{Model: harness.Single, App: a, Stderr: new(strings.Builder)})
	require.NoError(t, err)
	defer h.Close()
	post := func() int {
		resp, err := http.Post(h.URL, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, post())
	states, err := filepath.Glob(filepath.Join(a.Dir, "rate-limits", "*.json"))
	require.NoError(t, err)
	require.Len(t, states, 1)
	require.NoError(t, os.Remove(states[0]))
	require.NoError(t, os.Mkdir(states[0], 0o700)) // break it
	assert.Equal(t, http.StatusServiceUnavailable, post())
	require.NoError(t, os.Remove(states[0])) // repair it
	assert.Equal(t, http.StatusOK, post())
}

// Beyond one host: two hosts, each with its own files, let 2 × limit
// through, and two hosts of workers with their own maps 2 × workers × limit
// (Redis, which holds the limit, is package beyondonehost's).
func TestTwoHosts(t *testing.T) {
	tests := []struct {
		store    harness.StoreKind
		wantOK   int
		wantProc int
	}{
		{harness.File, 60, 4},
		{harness.Memory, 70, 4},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/concurrency-%d", tt.store, conc), func(t *testing.T) {
				row, err := httphost.Run(context.Background(), httphost.Scenario{Model: harness.TwoHosts, App: app(t, tt.store), Workers: 2,
					Workload: httphost.Workload{Requests: 70, Concurrency: conc}})
				require.NoError(t, err)
				assert.Equal(t, tt.wantOK, row.OK, "200s")
				assert.Equal(t, tt.wantProc, row.Processes)
				assert.Empty(t, row.Problems)
			})
		}
	}
}

// The workers' own result lines are checked against what the client saw.
func TestWorkersTallyMustMatchTheClient(t *testing.T) {
	row, err := httphost.Run(context.Background(), httphost.Scenario{Model: harness.Pool, App: app(t, harness.Memory), Workers: 2,
		Workload: httphost.Workload{Requests: 5, Concurrency: 1}})
	require.NoError(t, err)
	require.Empty(t, row.Problems)
	row.OK-- // as if the client had miscounted one 200
	row.Throttled++
	assert.Contains(t, strings.Join(httphost.Recheck(row).Problems, "; "), "workers report 5 allowed and 0 throttled, the client saw 4 and 1")
}
