//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package stress

import (
	"testing"
	"time"
)

// P99 reads Hit's result lines and reports their median 99th percentile;
// a line without one, or with a number it cannot read, is passed over.
func TestP99(t *testing.T) {
	for _, tt := range []struct {
		lines []string
		want  time.Duration
	}{
		{[]string{"hits=10 p99=3000", "hits=10 p99=1000", "hits=10 p99=2000"}, 2000},
		{[]string{"hits=10 p99=5000", "hits=10", "hits=10 p99=x"}, 5000},
		{[]string{"count=3"}, 0},
		{nil, 0},
	} {
		if got := P99(tt.lines); got != tt.want {
			t.Errorf("P99(%q) = %v, want %v", tt.lines, got, tt.want)
		}
	}
}
