package windowboundary

import (
	"math/rand/v2"
	"sort"
	"time"

	"github.com/ratelab/ratelab"
)

// Run feeds requests (in time order) to a and returns the accepted ones.
func Run(a Algorithm, requests []time.Time) []time.Time {
	var accepted []time.Time
	for _, t := range requests {
		if a.AllowAt(t) {
			accepted = append(accepted, t)
		}
	}
	return accepted
}

// MaxIn returns the largest number of accepted requests (in time order)
// inside any span [t, t+d], both ends included, and where such a span
// starts.
func MaxIn(accepted []time.Time, d time.Duration) (int, time.Time) {
	best, at := 0, time.Time{}
	j := 0
	for i := range accepted {
		for accepted[i].Sub(accepted[j]) > d {
			j++
		}
		if n := i - j + 1; n > best {
			best, at = n, accepted[j]
		}
	}
	return best, at
}

// Edge is the adversarial pattern for a fixed window opened at t0: one
// request opens the window, limit requests arrive one second before it
// resets, and limit more at the reset. t0 should be a multiple of window
// (an hour boundary for 1h) so that the sliding counter's clock-aligned
// windows reset at the same instant.
func Edge(limit int, window time.Duration, t0 time.Time) []time.Time {
	reqs := []time.Time{t0}
	for range limit {
		reqs = append(reqs, t0.Add(window-time.Second))
	}
	for range limit {
		reqs = append(reqs, t0.Add(window))
	}
	return reqs
}

// Paced is the adversarial pattern for the sliding counter: limit
// requests in the last second of one clock-aligned window, then, in the
// next window, one request each time the counter's weighted estimate has
// room for it — every window/limit. The counter assumes the previous
// window's requests were spread evenly; these were all at its end, so they
// still count in full while the estimate has already discounted them.
func Paced(limit int, window time.Duration, t0 time.Time) []time.Time {
	var reqs []time.Time
	for range limit {
		reqs = append(reqs, t0.Add(window-time.Second))
	}
	step := window / time.Duration(limit)
	for k := 1; k < limit; k++ {
		reqs = append(reqs, t0.Add(window+time.Duration(k)*step))
	}
	return reqs
}

// Random is seeded, bursty traffic: n requests over span from t0, in
// clusters of 1 to 10 at exponentially spaced times, sorted.
func Random(seed uint64, n int, span time.Duration, t0 time.Time) []time.Time {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var reqs []time.Time
	for len(reqs) < n {
		at := t0.Add(time.Duration(r.Int64N(int64(span))))
		for k := 1 + r.IntN(10); k > 0 && len(reqs) < n; k-- {
			reqs = append(reqs, at.Add(time.Duration(r.IntN(5000))*time.Millisecond))
		}
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Before(reqs[j]) })
	return reqs
}

// CounterError measures the sliding counter's approximation on the same
// traffic. The counter counts every request, accepted or not, and weighs
// the previous window's count as if its requests had been spread evenly;
// the exact figure it stands for is the number of requests in the
// window-long span ending now, this one included. A request it let through
// while that exact figure was above limit is wrongly allowed; one it
// refused while the figure was within limit is wrongly refused.
func CounterError(limit int, window time.Duration, requests []time.Time) (wronglyAllowed, wronglyRefused int) {
	c := New(ratelab.SlidingCounter, limit, window, 0)
	for i, t := range requests {
		exact := 0
		for _, r := range requests[:i+1] {
			if !r.Before(t.Add(-window)) {
				exact++
			}
		}
		ok := c.AllowAt(t)
		switch {
		case ok && exact > limit:
			wronglyAllowed++
		case !ok && exact <= limit:
			wronglyRefused++
		}
	}
	return wronglyAllowed, wronglyRefused
}
