package algorithm

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
)

const maxWindowSeconds = int64(ratelab.MaxWindow / time.Second)

// maxSlidingCount is where the sliding counter's counts saturate: with
// windows of at most MaxWindow, count × window stays below 2^53, exact in
// the doubles of a Redis script as in int64.
const maxSlidingCount = 1 << 28

// Sliding is a sliding-window counter: its window length, the start of the
// current clock-aligned window (Unix seconds, a multiple of the window),
// the hits counted in it and the hits counted in the window before it.
// The zero value is the absent state.
type Sliding struct {
	Window      int64
	WindowStart int64
	Count       int64
	PrevCount   int64
}

// !+sliding

// Take counts one hit of r at now. The windows are aligned to the clock;
// a hit is weighed as
//
//	ceil(prev_count × (window − elapsed) / window + count)
//
// where elapsed is the time since the current window started, and allowed
// while that is at most the limit. Every hit counts, refused or not, so a
// client that keeps hammering keeps its weight in the next window high
// (IgnoreRefusals counts only allowed ones).
//
// A hit stamped in a window before the state's counts in the state's
// current window, at its start: time never runs backwards.
func (s Sliding) Take(r ratelab.Rule, now time.Time) (Sliding, ratelab.Decision, error) {
	w, t, nowMs := int64(r.Window/time.Second), now.Unix(), now.UnixMilli()
	if s.Window != 0 && s.Window != w {
		return s, ratelab.Decision{}, WindowConflict(r, s.Window)
	}
	cur := max(t-mod(t, w), s.WindowStart)
	switch s.WindowStart {
	case cur:
	case cur - w:
		s = Sliding{WindowStart: cur, PrevCount: s.Count}
	default: // the first hit, or both windows over
		s = Sliding{WindowStart: cur}
	}
	s.Window = w
	s.PrevCount = min(max(s.PrevCount, 0), maxSlidingCount)
	count := min(max(s.Count, 0), maxSlidingCount-1) + 1
	elapsed := min(max(t-cur, 0), w)
	weighted := ceilDiv(s.PrevCount*(w-elapsed)+count*w, w)
	if weighted <= r.Limit || r.Refusals != ratelab.IgnoreRefusals {
		s.Count = count
	} else {
		s.Count = min(max(s.Count, 0), maxSlidingCount) // refused, not counted
	}
	d := ratelab.Decision{
		Allowed:    weighted <= r.Limit,
		Remaining:  max(0, r.Limit-weighted),
		ResetAfter: since((cur+2*w)*1000, nowMs),
	}
	if !d.Allowed {
		d.RetryAfter = since(Sliding{Window: w, WindowStart: cur, Count: count, PrevCount: s.PrevCount}.retryAt(t, r.Limit)*1000, nowMs)
	}
	return s, d, nil
}

// !-sliding

// retryAt is the first second at or after t (Unix seconds) at which one
// more hit would be allowed under limit, if no other hit came first.
func (s Sliding) retryAt(t, limit int64) int64 {
	w := s.Window
	if s.Count+1 <= limit {
		// In the current window, at elapsed e, one more hit is allowed when
		// P(w−e) + (C+1)w ≤ limit·w, that is e ≥ w − (limit−C−1)·w/P.
		e := w - (limit-s.Count-1)*w/s.PrevCount // PrevCount > 0, or the hit was allowed
		return max(t, s.WindowStart+min(e, w))
	}
	// Not before the next window, where this window's count becomes the
	// previous one: C(w−e) + w ≤ limit·w.
	next := s.WindowStart + w
	if limit <= 1 {
		return next + w
	}
	return next + w - (limit-1)*w/s.Count
}

// Append appends the state's encoding to dst.
func (s Sliding) Append(dst []byte) []byte {
	dst = append(dst, `{"window":`...)
	dst = strconv.AppendInt(dst, s.Window, 10)
	dst = append(dst, `,"window_start":`...)
	dst = strconv.AppendInt(dst, s.WindowStart, 10)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, s.Count, 10)
	dst = append(dst, `,"prev_count":`...)
	dst = strconv.AppendInt(dst, s.PrevCount, 10)
	return append(dst, '}')
}

// DecodeSliding parses a sliding-window-counter state, as strictly as
// DecodeFixed parses a fixed window: counts at least zero, a window a rule
// may have, and a window start that is a multiple of it.
func DecodeSliding(b []byte) (Sliding, error) {
	if len(b) == 0 {
		return Sliding{}, nil
	}
	var s Sliding
	if v, ok := scanFlat(b, `{"window":`, `,"window_start":`, `,"count":`, `,"prev_count":`); ok {
		s = Sliding{Window: v[0], WindowStart: v[1], Count: v[2], PrevCount: v[3]}
	} else {
		var raw struct {
			Window      *int64 `json:"window"`
			WindowStart *int64 `json:"window_start"`
			Count       *int64 `json:"count"`
			PrevCount   *int64 `json:"prev_count"`
		}
		if err := decodeObject(b, &raw); err != nil {
			return Sliding{}, err
		}
		if raw.Window == nil || raw.WindowStart == nil || raw.Count == nil || raw.PrevCount == nil {
			return Sliding{}, errors.New(`algorithm: state lacks "window", "window_start", "count" or "prev_count"`)
		}
		s = Sliding{Window: *raw.Window, WindowStart: *raw.WindowStart, Count: *raw.Count, PrevCount: *raw.PrevCount}
	}
	if err := checkWindow(s.Window); err != nil {
		return Sliding{}, err
	}
	switch {
	case s.Count < 0 || s.PrevCount < 0:
		return Sliding{}, errors.New("algorithm: state has a negative count")
	case s.WindowStart < 0 || s.WindowStart >= maxUnix || s.WindowStart%s.Window != 0:
		return Sliding{}, fmt.Errorf("algorithm: state window_start %d is not a multiple of its window before the year 3000", s.WindowStart)
	}
	return s, nil
}
