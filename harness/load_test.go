package harness_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/lab/redisserver"
	"github.com/ratelab/ratelab/internal/lab/sqlserver"
	"github.com/ratelab/ratelab/internal/sqlstore"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/internal/weave"
)

// The claim that load alone never opens the door, for every shared store
// under a pool of workers and under CGI, with the default fail policy
// (open): 2000 requests from one address, 200 at once, limit 30 — exactly
// 30 allowed, and no hit let through uncounted; the rest 429, or 503 where
// the server was too busy to take a hit in time (on a busy machine, even a
// fixed window's one statement: 9 of 2000 under CGI with two CPU-bound
// loops beside). The findings it pins: PostgreSQL CGI hits that timed out
// on the dial, the greeting, the authentication or the statement went
// through fail-open (28 of 2000 in CI; up to 577 at 400 at once); and the
// database stores let 1265 of 2000 through at 100 at once (connect
// timeouts: pgx tried TLS before plain text within 500 ms) and 518 under
// a pool whose workers could each open 64 connections against MariaDB's
// 151 ("Too many connections"); and with the CGI front starting a program
// for each of 200 requests at once, the PostgreSQL hits shared two busy
// cores so thinly that 1992 of 2000 ran out of time, 8 allowed (CI; two
// such runs side by side, 1743 and 1840): the front now runs at most
// DefaultCGIProcs at once, as a shared host does (881 and 904 refused in
// those two runs, 30 allowed each). The
// servers run at their stock max_connections (151, 100). The processes are the ratelab command as
// built for use, not this race-instrumented test binary.
func TestLoadIsNotAnOutage(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, weave.BuildBinaries("..", exe))
	apps := map[string]harness.App{"file": {Store: "file"}}
	if redisserver.Available() {
		apps["redis"] = harness.App{Store: "redis", RedisURL: redisserver.ForTest(t).URL()}
	}
	db := map[harness.Model]string{harness.Pool: "/1", harness.CGI: "/2"} // a database of its own each
	if sqlserver.MariaDBAvailable() {
		apps["mysql"] = harness.App{Store: "mysql", DSN: sqlserver.MariaDBForTest(t).DSN}
	}
	if sqlserver.PostgresAvailable() {
		apps["postgres"] = harness.App{Store: "postgres", DSN: sqlserver.PostgresForTest(t).DSN}
	}
	for _, c := range loadCases() {
		t.Run(c.name, func(t *testing.T) {
			a, ok := apps[c.store]
			if !ok {
				t.Skipf("%s's server is not installed (make test's .ci/run installs it)", c.store)
			}
			a.Limit, a.Window, a.Algorithm = 30, time.Hour, c.alg
			a.Prefix = fmt.Sprintf("load_%s_%s_", c.model, c.alg)
			switch c.store {
			case "file":
				a.Dir = t.TempDir()
			case "redis":
				a.RedisURL = strings.TrimSuffix(a.RedisURL, "/0") + db[c.model]
			}
			got, logs := underLoad(t, a, c.model, c.workers, filepath.Join(exe, "ratelab"))
			assert.Equal(t, 30, got[200], "allowed of 2000 requests, 200 at once: %v", got)
			// 502: the pool's front got no answer from a worker, on a
			// machine too starved to serve it in time — refused too.
			assert.Equal(t, 1970, got[429]+got[503]+got[502], "the rest refused: %v; logs: %.2000s", got, logs)
			t.Logf("%v", got) // 503s come and go with the machine's load: how many is a measure, not a claim
			if n := strings.Count(logs, "not counted"); n > 0 {
				t.Errorf("%d hits let through uncounted; the first: %.600s", n, logs[strings.Index(logs, "not counted"):])
			}
		})
	}
}

type loadCase struct {
	name, store string
	model       harness.Model
	workers     int
	alg         ratelab.Algorithm
}

// loadCases are every shared store's fixed window under a pool of 4 and
// under CGI; and the databases' sliding log — a row lock held for several
// round trips a hit — under a pool of 8, where 80 connections queued on
// one hot row ran out of time, and fail-open let the tail through (up to
// 292 of 2000): a busy server's refusal is now a 503, never a pass.
func loadCases() []loadCase {
	var cs []loadCase
	for _, store := range []string{"file", "redis", "mysql", "postgres"} {
		for _, m := range []harness.Model{harness.Pool, harness.CGI} {
			cs = append(cs, loadCase{store + "/" + string(m), store, m, 4, ratelab.FixedWindow})
		}
	}
	for _, store := range []string{"mysql", "postgres"} {
		cs = append(cs, loadCase{store + "/pool-8/log", store, harness.Pool, 8, ratelab.SlidingLog})
	}
	return cs
}

// underLoad serves a under model with workers — each given its share of
// a database's connections, as serve gives it — sends the load, and
// returns how many answers had each status and what the processes logged.
func underLoad(t *testing.T, a harness.App, model harness.Model, workers int, exe string) (map[int]int, string) {
	if a.DSN != "" && model == harness.Pool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		usable, err := a.CheckDatabase(ctx)
		cancel()
		require.NoError(t, err)
		a.Conns, err = sqlstore.ConnBudget(usable, workers)
		require.NoError(t, err)
	}
	logs := &syncbuf.Buffer{Limit: 1 << 20}
	h, err := harness.Start(harness.Config{Model: model, App: a, Workers: workers, Exe: exe, Stderr: logs})
	require.NoError(t, err)
	got := send(t, h.URL, 2000, 200)
	require.NoError(t, h.Close(), "answers %v; logs: %.3000s", got, logs.String())
	return got, logs.String()
}

// send sends n POSTs to url, conc at once, each on a connection of its
// own as ApacheBench does, and counts the answers by status.
func send(t *testing.T, url string, n, conc int) map[int]int {
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	var next atomic.Int64
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				resp, err := client.Post(url, "text/plain", strings.NewReader(""))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				got[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return got
}
