package brokeninmemory_test

import (
	"fmt"
	"time"

	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// Inside one process the count grows; a second Store — a second process —
// starts from nothing.
func ExampleStore() {
	now := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	var worker1, worker2 brokeninmemory.Store
	for range 3 {
		worker1.HitAt("demo-start:ip:203.0.113.7", time.Hour, now)
	}
	h1, _ := worker1.HitAt("demo-start:ip:203.0.113.7", time.Hour, now)
	h2, _ := worker2.HitAt("demo-start:ip:203.0.113.7", time.Hour, now)
	fmt.Println("worker 1 counts", h1.Count)
	fmt.Println("worker 2 counts", h2.Count)
	// Output:
	// worker 1 counts 4
	// worker 2 counts 1
}
