package windowboundary_test

import (
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
	windowboundary "github.com/ratelab/ratelab/window_boundary"
)

// The edge of a fixed window, 30 per hour: one request opens the window,
// 30 come in its last second and 30 more at its reset. The fixed window
// lets 60 through within one hour; the sliding log, which remembers every
// accepted instant, never more than 30.
func Example() {
	t0 := time.Date(2026, 7, 9, 0, 0, 0, 0, time.UTC)
	edge := windowboundary.Edge(30, time.Hour, t0)
	for _, alg := range []ratelab.Algorithm{ratelab.FixedWindow, ratelab.SlidingLog} {
		accepted := windowboundary.Run(windowboundary.New(alg, 30, time.Hour, 0), edge)
		most, _ := windowboundary.MaxIn(accepted, time.Hour)
		fmt.Printf("%-5s %d of %d accepted, %d within one hour\n", alg, len(accepted), len(edge), most)
	}
	// Output:
	// fixed 60 of 61 accepted, 60 within one hour
	// log   30 of 61 accepted, 30 within one hour
}
