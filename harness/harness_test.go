package harness_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/internal/childproc"
)

// The test binary is also every child process: childproc.RunIfChild turns a
// re-executed copy into one of the endpoint's processes before any test
// runs.
func TestMain(m *testing.M) {
	childproc.RunIfChild(harness.Roles())
	os.Exit(m.Run())
}

// !+example

// The lesson in six runs: ten requests from one address, a limit of 3,
// under one long-lived process, a pool of two workers and CGI, each
// process this test binary again. The in-memory store lets 3 through in
// one process, 2 × 3 in a pool, and all 10 under CGI, where every request
// is a new process with an empty map; the file store, shared by every
// process through flock(2), lets 3 through in all three.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "harness-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	for _, store := range []harness.StoreKind{harness.Memory, harness.File} {
		for _, m := range harness.Models() {
			app := harness.App{Store: store, Limit: 3, Window: time.Hour}
			if store == harness.File {
				if app.Dir, err = os.MkdirTemp(dir, "file-"); err != nil {
					panic(err)
				}
			}
			got, err := harness.Run(harness.Scenario{Model: m, App: app, Workers: 2, Requests: 10})
			if err != nil {
				panic(err)
			}
			first := "none refused"
			if got.FirstRefused > 0 {
				first = fmt.Sprintf("first refused #%d", got.FirstRefused)
			}
			fmt.Printf("%-6s %-6s %2d of 10 allowed (processes: %2d), %s\n", store, m, got.Allowed, got.Processes, first)
		}
	}
	// Output:
	// memory single  3 of 10 allowed (processes:  1), first refused #4
	// memory pool    6 of 10 allowed (processes:  2), first refused #7
	// memory cgi    10 of 10 allowed (processes: 10), none refused
	// file   single  3 of 10 allowed (processes:  1), first refused #4
	// file   pool    3 of 10 allowed (processes:  2), first refused #4
	// file   cgi     3 of 10 allowed (processes: 10), first refused #4
}

// !-example

// Run sees what Expect predicts, at other sizes than the example's: a
// pool of three over a limit of 4, 17 requests (an uneven deal), and a
// fixed clock.
func TestRunSeesWhatExpectPredicts(t *testing.T) {
	at := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	for _, store := range []harness.StoreKind{harness.Memory, harness.File} {
		for _, m := range harness.Models() {
			t.Run(fmt.Sprintf("%s/%s", store, m), func(t *testing.T) {
				app := harness.App{Store: store, Limit: 4, Window: time.Minute, Now: at}
				if store == harness.File {
					app.Dir = t.TempDir()
				}
				s := harness.Scenario{Model: m, App: app, Workers: 3, Requests: 17}
				got, err := harness.Run(s)
				if err != nil {
					t.Fatal(err)
				}
				want, why := harness.Expect(s)
				if got.Allowed != want || got.Allowed+got.Refused != s.Requests {
					t.Errorf("got %d allowed and %d refused, want %d allowed of %d (%s)", got.Allowed, got.Refused, want, s.Requests, why)
				}
			})
		}
	}
}

// A process that cannot make its store fails the run, loudly, with its
// own words; a model Run does not run is refused before any process
// starts.
func TestRunFailsLoudly(t *testing.T) {
	notADir := t.TempDir() + "/file"
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		s    harness.Scenario
		want string
	}{
		{"a store its process cannot open", harness.Scenario{Model: harness.Single, Requests: 1,
			App: harness.App{Store: harness.File, Dir: notADir, Limit: 1, Window: time.Hour}}, "not a directory"},
		{"under cgi too", harness.Scenario{Model: harness.CGI, Requests: 1,
			App: harness.App{Store: harness.File, Dir: notADir, Limit: 1, Window: time.Hour}}, "not a directory"},
		{"two hosts", harness.Scenario{Model: harness.TwoHosts, Workers: 1, Requests: 1,
			App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour}}, "two hosts and outages are httphost's"},
		{"an unknown model", harness.Scenario{Model: "fpm", Requests: 1,
			App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour}}, `unknown model "fpm"`},
		{"no workers", harness.Scenario{Model: harness.Pool, Requests: 1,
			App: harness.App{Store: harness.Memory, Limit: 1, Window: time.Hour}}, "workers 0 must be from 1 to 64"},
		{"a bad rule", harness.Scenario{Model: harness.Single, Requests: 1,
			App: harness.App{Store: harness.Memory, Window: time.Hour}}, "limit"},
	}
	for _, tt := range tests {
		_, err := harness.Run(tt.s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}
