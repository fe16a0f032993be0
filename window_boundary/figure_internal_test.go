package windowboundary

import (
	"github.com/ratelab/ratelab"
	"testing"
	"time"
)

// What the chapter says of the chart: the fixed window's trailing-hour
// count is 60 at the reset, 59 for almost an hour after, 30 once the old
// window's last second has left the hour.
func TestChartTrailingCount(t *testing.T) {
	c := DefaultConfig()
	acc := Run(New(ratelab.FixedWindow, 30, c.Window, 0), Edge(30, c.Window, c.T0))
	at := func(d time.Duration) int {
		_, ys := trailing(acc, c.Window, c.T0.Add(d), c.T0.Add(d))
		return ys[len(ys)-1]
	}
	for _, tt := range []struct {
		d    time.Duration
		want int
	}{
		{time.Hour, 60},
		{time.Hour + time.Second, 59},
		{2*time.Hour - 2*time.Second, 59},
		{2 * time.Hour, 30},
	} {
		if got := at(tt.d); got != tt.want {
			t.Errorf("trailing count at t0+%v: got %d, want %d", tt.d, got, tt.want)
		}
	}
}
