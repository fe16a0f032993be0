package brokeninmemory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// Inside one process the count grows; a second Store — a second process —
// starts from nothing.
func ExampleStore() {
	ctx := context.Background()
	rule := ratelab.Rule{Name: "demo-start", Limit: 30, Window: time.Hour}
	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	worker1, _ := ratelab.NewLimiter(new(brokeninmemory.Store), rule)
	worker2, _ := ratelab.NewLimiter(new(brokeninmemory.Store), rule)
	for range 3 {
		worker1.AllowAt(ctx, "ip:203.0.113.7", now)
	}
	d1, _ := worker1.AllowAt(ctx, "ip:203.0.113.7", now)
	d2, _ := worker2.AllowAt(ctx, "ip:203.0.113.7", now)
	fmt.Println("worker 1: remaining", d1.Remaining)
	fmt.Println("worker 2: remaining", d2.Remaining)
	// Output:
	// worker 1: remaining 26
	// worker 2: remaining 29
}
