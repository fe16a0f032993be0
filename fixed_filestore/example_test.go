//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
)

// Two stores on one directory — two processes, in production — share one
// count, kept in a file the PHP original could read.
func ExampleStore() {
	base, err := os.MkdirTemp("", "ratelab-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)

	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	rule := ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour}
	const key = "ip:203.0.113.7" // the original's key is demo-start:ip:203.0.113.7
	for process := 1; process <= 2; process++ {
		store, err := fixedfilestore.New(base, fixedfilestore.Options{})
		if err != nil {
			log.Fatal(err)
		}
		limiter, err := ratelab.NewLimiter(store, rule)
		if err != nil {
			log.Fatal(err)
		}
		d, err := limiter.AllowAt(context.Background(), key, now)
		store.Close()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("process %d: allowed %v, remaining %d, reset after %v\n", process, d.Allowed, d.Remaining, d.ResetAfter)
	}
	store, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	state, err := os.ReadFile(store.Path(rule, key))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", state)
	// Output:
	// process 1: allowed true, remaining 29, reset after 1h0m0s
	// process 2: allowed true, remaining 28, reset after 1h0m0s
	// {"count":2,"reset_at":1783558800}
}

// A login throttle is a security boundary: when its state cannot be reached
// it must refuse, not wave requests through.
func Example_failClosed() {
	base, err := os.MkdirTemp("", "ratelab-example")
	if err != nil {
		log.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	store, err := fixedfilestore.New(base, fixedfilestore.Options{Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	closed, err := ratelab.WithFailPolicy(store, ratelab.FailClosed, nil, quiet)
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := ratelab.NewLimiter(closed, ratelab.Rule{Name: "login", Limit: 5, Window: 15 * time.Minute, Algorithm: ratelab.SlidingLog})
	if err != nil {
		log.Fatal(err)
	}
	os.RemoveAll(base) // the disk goes away

	_, err = limiter.Allow(context.Background(), "user:alice")
	fmt.Println("refused:", errors.Is(err, ratelab.ErrUnavailable))
	// Output:
	// refused: true
}

// A sweep removes the states that are over, judged by each state itself,
// and reports every entry.
func ExampleStore_SweepAt() {
	base, err := os.MkdirTemp("", "ratelab-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(base)
	store, err := fixedfilestore.New(base, fixedfilestore.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	now, ctx := time.Date(2026, 7, 9, 3, 0, 0, 0, time.UTC), context.Background()
	limiter, err := ratelab.NewLimiter(store, ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	limiter.AllowAt(ctx, "ip:203.0.113.7", now.Add(-2*time.Hour)) // its window ended an hour ago
	limiter.AllowAt(ctx, "ip:198.51.100.9", now.Add(-time.Minute))

	report, err := store.SweepAt(now)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range report {
		fmt.Println(e.Name[:8], e.Action)
	}
	// Unordered output:
	// fa404fc5 removed
	// 8257c124 kept
}
