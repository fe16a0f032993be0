// Package flood floods an execution model of the harness with requests
// from one address, as ApacheBench does, and says what came back: the
// check that load alone never opens the door, which every store's tests
// run under a pool of workers and under CGI.
package flood

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/internal/weave"
)

// The flood: Requests requests from one address, AtOnce of them at once,
// against a limit of Limit an hour. 200 at once keeps every process of a
// model busy and a CGI front's queue full; the requests after the first
// 200 go on arriving as the first are answered. (The findings the stores'
// tests name were made with 2000 requests, 200 at once; 400 keep the same
// flood twice over, in a fifth of the time.)
const (
	Requests = 400
	AtOnce   = 200
	Limit    = 30
)

// Binary builds the ratelab command and returns its path: a flood's
// processes are the command as built for use, not a race-instrumented test
// binary. The path is the module's tmp/flood/ratelab, replaced only when
// the command built differs from it: a test that runs it opens the same
// unchanged file while the sources are unchanged, so that go test keeps
// its result for the next run.
func Binary(t *testing.T) string {
	t.Helper()
	binaryMu.Lock()
	defer binaryMu.Unlock()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	built := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, weave.BuildBinaries(root, built))
	exe := filepath.Join(root, "tmp", "flood", "ratelab")
	require.NoError(t, replaceIfChanged(filepath.Join(built, "ratelab"), exe))
	return exe
}

// binaryMu makes the tests of one process that call Binary at once (two
// parallel floods) build and replace the command one after the other:
// the second finds the bytes in place and writes nothing. Two writers
// shared one temporary name, and one renamed the file while the other
// still wrote it — "text file busy" when a flood ran it.
var binaryMu sync.Mutex

// replaceIfChanged moves the file from to the path to unless to holds the
// same bytes already; another process may be doing the same at once (the
// packages' tests run side by side), so the move is a rename, whole, of
// a file of a name of its own, written and closed before it.
func replaceIfChanged(from, to string) error {
	want, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if have, err := os.ReadFile(to); err == nil && bytes.Equal(have, want) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(to), filepath.Base(to)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(want)
	if err == nil {
		err = f.Chmod(0o755)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), to)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Check floods a, served under model by workers processes of exe, and
// checks the claim: exactly Limit allowed, the rest refused — 429, or 503
// where the server was too busy to take a hit in time, or 502 where the
// pool's front got no answer from a worker on a machine too starved to
// serve it — and no hit let through uncounted.
func Check(t *testing.T, a harness.App, model harness.Model, workers int, exe string) {
	t.Helper()
	a.Limit, a.Window = Limit, time.Hour
	logs := &syncbuf.Buffer{Limit: 1 << 20}
	h, err := httphost.Start(httphost.Config{Model: model, App: a, Workers: workers, Exe: exe, Stderr: logs})
	require.NoError(t, err)
	got := Send(t, h.URL, Requests, AtOnce)
	require.NoError(t, h.Close(), "answers %v; logs: %.3000s", got, logs.String())
	assert.Equal(t, Limit, got[200], "allowed of %d requests, %d at once: %v", Requests, AtOnce, got)
	assert.Equal(t, Requests-Limit, got[429]+got[503]+got[502], "the rest refused: %v; logs: %.2000s", got, logs.String())
	t.Logf("%v", got) // 503s come and go with the machine's load: how many is a measure, not a claim
	if n := strings.Count(logs.String(), "not counted"); n > 0 {
		l := logs.String()
		t.Errorf("%d hits let through uncounted; the first: %.600s", n, l[strings.Index(l, "not counted"):])
	}
}

// Send sends n POSTs to url, conc at once, each on a connection of its
// own as ApacheBench does, and counts the answers by status.
func Send(t *testing.T, url string, n, conc int) map[int]int {
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
