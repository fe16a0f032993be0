//go:build linux || darwin

package fixedfilestore_test

import (
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
	const key = "demo-start:ip:203.0.113.7"
	for process := 1; process <= 2; process++ {
		store, err := fixedfilestore.New(base, fixedfilestore.Options{})
		if err != nil {
			log.Fatal(err)
		}
		h, err := store.HitAt(key, time.Hour, now)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("process %d: count %d, reset_at %d\n", process, h.Count, h.ResetAt.Unix())
	}
	store, _ := fixedfilestore.New(base, fixedfilestore.Options{})
	state, _ := os.ReadFile(store.Path(key))
	fmt.Printf("%s\n", state)
	// Output:
	// process 1: count 1, reset_at 1783558800
	// process 2: count 2, reset_at 1783558800
	// {"count":2,"reset_at":1783558800}
}

// A login throttle is a security boundary: when its state cannot be reached
// it must refuse, not wave requests through.
func ExampleOptions_failClosed() {
	base, err := os.MkdirTemp("", "ratelab-example")
	if err != nil {
		log.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	store, err := fixedfilestore.New(base, fixedfilestore.Options{FailPolicy: ratelab.FailClosed, Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	limiter, err := ratelab.NewLimiter(store, 5, 15*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	os.RemoveAll(base) // the disk goes away

	_, err = limiter.Allow("login:user:alice")
	fmt.Println("refused:", errors.Is(err, ratelab.ErrUnavailable))
	// Output:
	// refused: true
}

// A sweep removes state whose window ended long ago and reports every entry.
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
	now := time.Now()
	store.HitAt("demo-start:ip:203.0.113.7", time.Hour, now)
	old := now.Add(-3 * time.Hour)
	os.Chtimes(store.Path("demo-start:ip:203.0.113.7"), old, old)
	store.HitAt("demo-start:ip:198.51.100.9", time.Hour, now)

	report, err := store.SweepAt(time.Hour, now)
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
