package beyondonehost_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/lab/flood"
	"github.com/ratelab/ratelab/lab/redisserver"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
	boundaryreport "github.com/ratelab/ratelab/window_boundary/report"
)

// The test binary is also every child process of the harness, which this
// package's import registers the redis kind in.
func TestMain(m *testing.M) {
	childproc.RunIfChild(httphost.Roles(), boundaryreport.Roles())
	os.Exit(m.Run())
}

// post sends one POST to url and returns its status.
func post(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Post(url, "text/plain", strings.NewReader(""))
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// Beyond one host: two hosts, each with its own files, let 2 × limit
// through; Redis, shared by every process on both, holds the limit, as it
// does under CGI (at a limit of 10: the lesson is the same at any limit).
func TestTwoHostsAndRedis(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	tests := []struct {
		model    harness.Model
		store    harness.StoreKind
		wantOK   int
		wantProc int
	}{
		{harness.TwoHosts, harness.File, 20, 4},
		{harness.TwoHosts, beyondonehost.Redis, 10, 4},
		{harness.CGI, beyondonehost.Redis, 10, 30},
	}
	for _, tt := range tests {
		for _, conc := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/%s/concurrency-%d", tt.model, tt.store, conc), func(t *testing.T) {
				require.NoError(t, c.FlushDB(context.Background()).Err())
				a := harness.App{Store: tt.store, Server: srv.URL(), Limit: 10, Window: time.Hour}
				if tt.store == harness.File {
					a.Dir = t.TempDir()
				}
				row, err := httphost.Run(context.Background(), httphost.Scenario{Model: tt.model, App: a, Workers: 2,
					Workload: httphost.Workload{Requests: 30, Concurrency: conc}})
				require.NoError(t, err)
				assert.Equal(t, tt.wantOK, row.OK, "200s")
				assert.Equal(t, tt.wantProc, row.Processes)
				assert.Empty(t, row.Problems)
			})
		}
	}
}

// Fail-local is the in-memory store as a fallback: with the shared store
// out, a pool lets workers × limit through and CGI every request — no
// better than fail-open there. Every row must show it, as the demo claims
// (at a limit of 10: the lesson is the same at any limit).
func TestOutageDemoFailLocalIsTheLessonAgain(t *testing.T) {
	for _, p := range []ratelab.FailPolicy{ratelab.FailLocal, ratelab.FailOpen} {
		a := harness.App{Limit: 10, Window: time.Hour, FailPolicy: p, Now: time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)}
		rep, err := beyondonehost.OutageDemo(context.Background(), a, 2, httphost.Workload{Requests: 25, Concurrency: 8}, nil)
		require.NoError(t, err)
		want := map[ratelab.FailPolicy][]int{ratelab.FailLocal: {10, 20, 25, 10, 20, 25}, ratelab.FailOpen: {25, 25, 25, 25, 25, 25}}[p]
		var got []int
		for _, row := range rep.Rows {
			got = append(got, row.OK)
			assert.True(t, row.Pass(), "%v %s: %v", p, row.Model, row.Problems)
		}
		assert.Equal(t, want, got, "fail %v: 200s of single, pool, cgi, one by one then as a burst", p)
	}
}

// The endpoint under CGI, every request a new process, counting in a
// three-primary Redis Cluster named by a cluster URL: 429 from #31.
func TestCGIThrottlesOnARedisCluster(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	a := harness.App{Store: beyondonehost.Redis, Server: cl.URL(), Limit: 30, Window: time.Hour}
	h, err := httphost.Start(httphost.Config{Model: harness.CGI, App: a, Stderr: new(strings.Builder)})
	require.NoError(t, err)
	defer h.Close()
	first429 := 0
	for i := 1; i <= 32; i++ {
		if post(t, h.URL) == http.StatusTooManyRequests && first429 == 0 {
			first429 = i
		}
	}
	assert.Equal(t, 31, first429)
}

// A worker's log is one format: go-redis's own lines (a dial that failed)
// are records of the worker's logger, as the store's are, not lines of
// the log package's format in between (the newcomer's finding, under a
// pool with Redis down).
func TestWorkersLogGoRedisAsTheirOwnRecords(t *testing.T) {
	for _, model := range []harness.Model{harness.Pool, harness.CGI} {
		t.Run(string(model), func(t *testing.T) {
			a := harness.App{Store: beyondonehost.Redis, Server: beyondonehost.Unreachable, Limit: 30, Window: time.Hour}
			var logged syncbuf.Buffer
			h, err := httphost.Start(httphost.Config{Model: model, App: a, Workers: 1, Stderr: &logged})
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, post(t, h.URL), "fail-open lets the hit through")
			require.NoError(t, h.Close())
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			var goRedis int
			for _, l := range lines {
				if strings.Contains(l, "failed to dial") { // go-redis's line
					goRedis++
					assert.True(t, strings.HasPrefix(l, "time="), "a go-redis line in another format: %q", l)
				}
			}
			assert.Positive(t, goRedis, "no go-redis line among %q", lines)
		})
	}
}

// Load is not an outage on Redis either: one address flooding a pool and
// CGI gets exactly the limit (package flood).
func TestLoadIsNotAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a pool and CGI with requests; skipped with -short")
	}
	// Beside the package's hung-server test, which mostly waits.
	t.Parallel()
	srv := redisserver.ForTest(t)
	exe := flood.Binary(t)
	for i, m := range []harness.Model{harness.Pool, harness.CGI} {
		t.Run("redis/"+string(m), func(t *testing.T) {
			url := fmt.Sprintf("%s/%d", strings.TrimSuffix(srv.URL(), "/0"), i+1) // a database of its own each
			flood.Check(t, harness.App{Store: beyondonehost.Redis, Server: url}, m, 4, exe)
		})
	}
}

// The fixed window's edge with real processes sharing a Redis: each
// process is told its instant, nobody sleeps, and every algorithm decides
// across processes exactly as the in-memory store decides in one (at a
// limit of 5: the edge is the same at any limit).
func TestCrossProcessBurstThroughRedis(t *testing.T) {
	srv := redisserver.ForTest(t)
	t0, w := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC), time.Hour
	for _, a := range windowboundary.All(5, w, 2) {
		l := a.(*windowboundary.Limited)
		alg := l.Rule.Algorithm
		t.Run(string(alg), func(t *testing.T) {
			want, _ := windowboundary.MaxIn(windowboundary.Run(windowboundary.New(alg, 5, w, 2), windowboundary.Edge(5, w, t0)), w)
			target := boundaryreport.Target{Store: beyondonehost.Redis, Server: srv.URL(), Prefix: "wb:" + string(alg) + ":"}
			b, err := boundaryreport.CrossProcessBurst(target, l.Rule, t0)
			require.NoError(t, err)
			assert.Equal(t, want, b.MaxInWindow, "across processes as in one")
		})
	}
}
