package httplimit_test

// !+app

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/httplimit"
)

// The fix in an application: the file store — shared by every process on
// the machine, so it holds under CGI and a worker pool — behind a
// net/http handler, failing closed on purpose because this limit guards
// logins, and failing open would let an attacker through whenever the
// disk is unavailable.
func Example_fileStoreInAnApp() {
	base, _ := os.MkdirTemp("", "app-")
	defer os.RemoveAll(base)

	store, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		log.Fatal(err) // a missing or unusable directory: a configuration error, found at start
	}
	defer store.Close()
	closed, err := ratelab.WithFailPolicy(store, ratelab.FailClosed, nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := ratelab.NewLimiter(closed,
		ratelab.Rule{Name: "login", Limit: 5, Window: 15 * time.Minute, Algorithm: ratelab.SlidingLog})
	if err != nil {
		log.Fatal(err)
	}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "welcome") })
	handler := (&httplimit.Middleware{Limiter: limiter}).Wrap(login)

	for range 6 {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = "203.0.113.7:50000"
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ")
	}
	fmt.Println()
	// Output:
	// 200 200 200 200 200 429
}

// !-app
