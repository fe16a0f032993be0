package ratelab

import (
	"fmt"
	"time"
)

// Algorithm names the windowing rule a store applies.
type Algorithm string

const (
	// FixedWindow is the original's rule ([State.Next]): a window opens at
	// a key's first hit and lasts one window length. Cheap and simple, but
	// up to 2 × limit hits can land in one window-long span across a reset.
	FixedWindow Algorithm = "fixed"
	// SlidingCounter is the sliding-window counter Cloudflare published
	// ([SlidingState.Next]): windows aligned to the clock, and a hit is
	// weighed against this window's count plus the previous window's count
	// scaled by how much of it still overlaps the last window length. It
	// removes the burst at the reset at the price of an approximation.
	SlidingCounter Algorithm = "sliding"
)

// ParseAlgorithm parses "fixed" or "sliding".
func ParseAlgorithm(s string) (Algorithm, error) {
	switch a := Algorithm(s); a {
	case FixedWindow, SlidingCounter:
		return a, nil
	}
	return "", fmt.Errorf("ratelab: unknown algorithm %q: use fixed or sliding", s)
}

// SlidingState is a sliding-window counter as stores keep it: the start of
// the current clock-aligned window (Unix seconds, a multiple of the window
// length), the hits counted in it, and the hits counted in the window
// before it. Its JSON form is {"window_start":S,"count":C,"prev_count":P}.
type SlidingState struct {
	WindowStart int64 `json:"window_start"`
	Count       int64 `json:"count"`
	PrevCount   int64 `json:"prev_count"`
}

// Next returns the state after one hit at now. Every hit is counted,
// throttled or not, as the fixed window counts them: a client that keeps
// hammering keeps its weight in the next window high.
func (s SlidingState) Next(now time.Time, window time.Duration) SlidingState {
	w := int64(window / time.Second)
	cur := now.Unix() - mod(now.Unix(), w)
	switch {
	case s.WindowStart == cur:
	case s.WindowStart == cur-w:
		s = SlidingState{WindowStart: cur, PrevCount: s.Count}
	default: // the first hit, both windows over, or a clock stepped back
		s = SlidingState{WindowStart: cur}
	}
	// Bound hostile or absurd counts so the arithmetic cannot overflow.
	s.Count = min(max(s.Count, 0), maxSlidingCount-1) + 1
	s.PrevCount = min(max(s.PrevCount, 0), maxSlidingCount)
	return s
}

// Hit reports the state at now (just after a hit, as Next returns it). Its
// Count is the weighted count
//
//	ceil(prev_count × (window − elapsed) / window + count)
//
// where elapsed is the time since the current window started, so the
// Limiter's rule "allowed while Count ≤ limit" applies unchanged. ResetAt
// is the end of the current window; for a throttled hit the Limiter asks
// [SlidingState.RetryAt] instead, through Hit.Sliding.
func (s SlidingState) Hit(now time.Time, window time.Duration) Hit {
	w := int64(window / time.Second)
	elapsed := min(max(now.Unix()-s.WindowStart, 0), w)
	return Hit{
		Count:   ceilDiv(s.PrevCount*(w-elapsed)+s.Count*w, w),
		ResetAt: time.Unix(s.WindowStart+w, 0),
		Sliding: &s,
	}
}

// RetryAt is the first second at or after now at which one more hit would
// be allowed under limit, if no other hit came first.
func (s SlidingState) RetryAt(now time.Time, window time.Duration, limit int64) time.Time {
	w, t := int64(window/time.Second), now.Unix()
	if s.Count+1 <= limit {
		// In the current window, at elapsed e, one more hit is allowed when
		// P(w−e) + (C+1)w ≤ limit·w, that is e ≥ w − (limit−C−1)·w/P.
		if s.PrevCount == 0 {
			return time.Unix(t, 0)
		}
		e := w - (limit-s.Count-1)*w/s.PrevCount
		return time.Unix(max(t, s.WindowStart+min(e, w)), 0)
	}
	// Not before the next window, where this window's count becomes the
	// previous one: C(w−e) + w ≤ limit·w.
	next := s.WindowStart + w
	if limit <= 1 {
		return time.Unix(next+w, 0)
	}
	return time.Unix(next+w-(limit-1)*w/s.Count, 0)
}

const maxSlidingCount = 1 << 30

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
