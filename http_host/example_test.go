package httphost_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
)

// The lesson in six runs: ten requests from one address, a limit of 3,
// under one long-lived process, a pool of two workers and CGI — each
// process this test binary again. The in-memory store lets 3 through in
// one process, 2 × 3 in a pool, and all 10 under CGI, where every request
// is a new process with an empty map; the file store, shared by every
// process through flock(2), lets 3 through in all three.
func ExampleRun() {
	dir, err := os.MkdirTemp("", "harness-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	for _, store := range []harness.StoreKind{harness.Memory, harness.File} {
		for _, m := range harness.Models() {
			app := harness.App{Store: store, Limit: 3, Window: time.Hour}
			if store == harness.File {
				if app.Dir, err = os.MkdirTemp(dir, "file-"); err != nil {
					log.Fatal(err)
				}
			}
			row, err := httphost.Run(context.Background(), httphost.Scenario{Model: m, App: app, Workers: 2,
				Workload: httphost.Workload{Requests: 10, Concurrency: 1}})
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%-6s %-6s %2d of 10 allowed, processes that answered: %d\n", store, m, row.OK, row.Processes)
		}
	}
	// Output:
	// memory single  3 of 10 allowed, processes that answered: 1
	// memory pool    6 of 10 allowed, processes that answered: 2
	// memory cgi    10 of 10 allowed, processes that answered: 10
	// file   single  3 of 10 allowed, processes that answered: 1
	// file   pool    3 of 10 allowed, processes that answered: 2
	// file   cgi     3 of 10 allowed, processes that answered: 10
}
