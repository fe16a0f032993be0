package ratelab_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// The limiter allows 30 hits per window; the 31st is refused and told
// when to retry.
func ExampleLimiter_AllowAt() {
	rule := ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour}
	limiter, err := ratelab.NewLimiter(new(brokeninmemory.Store), rule)
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	var d ratelab.Decision
	for i := range 31 {
		d, _ = limiter.AllowAt(context.Background(), "ip:203.0.113.7", start.Add(time.Duration(i)*time.Minute))
	}
	fmt.Println("allowed:", d.Allowed, "remaining:", d.Remaining, "retry after:", d.RetryAfter)
	// Output:
	// allowed: false remaining: 0 retry after: 30m0s
}

// Two rules on one key — 3 a minute and 5 an hour — make a compound
// limiter: every rule counts every hit, the strictest decides.
func ExampleNewLimiter_compound() {
	limiter, err := ratelab.NewLimiter(new(brokeninmemory.Store),
		ratelab.Rule{Name: "per-minute", Limit: 3, Window: time.Minute, Algorithm: ratelab.SlidingLog},
		ratelab.Rule{Name: "per-hour", Limit: 5, Window: time.Hour})
	if err != nil {
		panic(err)
	}
	start := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	for _, at := range []time.Duration{0, 1, 2, 3, 61, 62, 63} {
		d, _ := limiter.AllowAt(context.Background(), "user:alice", start.Add(at*time.Second))
		fmt.Printf("+%2ds allowed=%-5v by %s\n", at, d.Allowed, d.Rule.Name)
	}
	// Output:
	// + 0s allowed=true  by per-minute
	// + 1s allowed=true  by per-minute
	// + 2s allowed=true  by per-minute
	// + 3s allowed=false by per-minute
	// +61s allowed=true  by per-hour
	// +62s allowed=false by per-hour
	// +63s allowed=false by per-hour
}
