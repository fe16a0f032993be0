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

// p99 is the nearest rank: 99 of 100 hits took no longer; with fewer than
// a hundred, the slowest but none; with none, 0 (a hitter of no hits).
func TestHitterP99(t *testing.T) {
	ms := func(n int) []time.Duration {
		d := make([]time.Duration, n)
		for i := range d {
			d[i] = time.Duration(n-i) * time.Millisecond // slowest first: p99 sorts
		}
		return d
	}
	for _, tt := range []struct {
		took []time.Duration
		want time.Duration
	}{
		{ms(100), 99 * time.Millisecond},
		{ms(3000), 2970 * time.Millisecond},
		{ms(20), 20 * time.Millisecond},
		{ms(1), time.Millisecond},
		{nil, 0},
	} {
		if got := p99(tt.took); got != tt.want {
			t.Errorf("p99 of %d hits = %v, want %v", len(tt.took), got, tt.want)
		}
	}
}
