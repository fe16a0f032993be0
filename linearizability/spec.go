package linearizability

import (
	"sort"
	"time"

	"github.com/ratelab/ratelab"
)

// The sequential specification: what one hit does to the state of one key
// under one rule when hits come one at a time, one function per
// algorithm, in the words of the chapter on window boundaries
// (docs/window-boundaries.md). It is written apart from package
// algorithm, whose steps the stores run, and imports none of it: a
// decision bug there makes histories that no order of these steps
// explains. Each function takes the state and a hit of rule r (checked)
// at instant now, and returns the next state and what the hit's client is
// told. Refusals are each algorithm's own (Rule.Normalized): counted by
// the fixed window and the sliding counter, not by the log and GCRA.

// told is what a hit's client is told: allowed or refused, how many more
// hits the limit leaves, and, when refused, how long to wait.
type told struct {
	Allowed    bool
	Remaining  int64
	RetryAfter time.Duration
}

// until is the wait from now to the instant ms (Unix milliseconds), and
// none once it has come.
func until(ms int64, now time.Time) time.Duration {
	return max(time.Duration(ms-now.UnixMilli())*time.Millisecond, 0)
}

// !+spec

// fixedState is a fixed window: the hits counted in it, and the second
// (Unix) at which it is over.
type fixedState struct{ count, end int64 }

// fixedWindow: the first hit opens a window of one window length; every
// hit in it counts, refused or not; once the window is over the count
// starts again from zero. A hit is allowed while the count, itself
// included, is at most the limit; a refused hit is told to retry when the
// window is over. Windows are whole seconds: a hit at 12:00:00.7 opens
// one that is over at 12:00:00 plus the window.
func fixedWindow(s fixedState, r ratelab.Rule, now time.Time) (fixedState, told) {
	if now.Unix() >= s.end { // no window yet, or it is over
		s = fixedState{end: now.Unix() + int64(r.Window/time.Second)}
	}
	s.count++
	if s.count <= r.Limit {
		return s, told{Allowed: true, Remaining: r.Limit - s.count}
	}
	return s, told{RetryAfter: until(s.end*1000, now)}
}

// slidingState is a sliding-window counter: the start (Unix seconds) of
// the current window, aligned to the clock, the hits counted in it, and
// those counted in the window before it.
type slidingState struct{ start, count, prev int64 }

// slidingCounter: the hit counts in its clock-aligned window, refused or
// not, and weighs the previous window's count by the share of it still
// inside the last window length, plus the current window's, rounded up;
// it is allowed while that weight is at most the limit. A refused hit is
// told to retry at the first second at which one more hit would be
// allowed if no other came.
func slidingCounter(s slidingState, r ratelab.Rule, now time.Time) (slidingState, told) {
	w, sec := int64(r.Window/time.Second), now.Unix()
	s = s.at(sec, w)
	s.count++
	if weight := s.weight(sec, w); weight <= r.Limit {
		return s, told{Allowed: true, Remaining: r.Limit - weight}
	}
	// Without hits the weight only falls, and two windows on it is 1: the
	// first second that allows one more is found by bisection.
	last := s.start + 2*w
	retry := sec + int64(sort.Search(int(last-sec+1), func(i int) bool {
		next := s.at(sec+int64(i), w)
		next.count++
		return next.weight(sec+int64(i), w) <= r.Limit
	}))
	return s, told{RetryAfter: until(retry*1000, now)}
}

// at is the state as a hit at second sec finds it: moved on to sec's
// window, its count becoming the previous one if that window follows its
// own. A hit stamped in a window before the state's counts in the state's
// window, at its start: time never runs backwards.
func (s slidingState) at(sec, w int64) slidingState {
	switch window := sec - sec%w; {
	case window <= s.start:
		return s
	case window == s.start+w:
		return slidingState{start: window, prev: s.count}
	default:
		return slidingState{start: window}
	}
}

// weight is prev × (w − elapsed) / w + count, rounded up, elapsed being
// the seconds from the window's start to sec (0 for a hit stamped before).
func (s slidingState) weight(sec, w int64) int64 {
	elapsed := min(max(sec-s.start, 0), w)
	return (s.prev*(w-elapsed) + s.count*w + w - 1) / w
}

// logState is a sliding log: the instants (Unix milliseconds) of the
// allowed hits, oldest first.
type logState struct{ allowed []int64 }

// slidingLog: a hit is allowed while fewer than limit allowed hits lie in
// the window-long span that ends at it, both ends included; an allowed
// hit's instant is recorded, a refused one's is not. A refused hit is told
// to retry when the oldest of them leaves the span: a window and a
// millisecond after it. A hit stamped before the latest recorded instant
// is taken at that instant.
func slidingLog(s logState, r ratelab.Rule, now time.Time) (logState, told) {
	at := now.UnixMilli()
	if n := len(s.allowed); n > 0 {
		at = max(at, s.allowed[n-1])
	}
	var inSpan []int64
	for _, t := range s.allowed {
		if t >= at-r.Window.Milliseconds() {
			inSpan = append(inSpan, t)
		}
	}
	if int64(len(inSpan)) >= r.Limit {
		return s, told{RetryAfter: until(inSpan[0]+r.Window.Milliseconds()+1, now)}
	}
	return logState{append(inSpan, at)}, told{Allowed: true, Remaining: r.Limit - int64(len(inSpan)) - 1}
}

// gcraState is GCRA's: when (Unix milliseconds) the next hit is due.
type gcraState struct{ due int64 }

// gcra: hits are due one every interval, the window divided by the limit
// and rounded up to a millisecond, and up to burst may come early: a hit
// is allowed unless it comes more than burst − 1 intervals before it is
// due (due being now if that is later). An allowed hit makes the next one
// due an interval later; a refused one changes nothing, and is told to
// wait until that earliest instant. Remaining is how many more could come
// at this same instant: one per whole interval now lies past the earliest.
func gcra(s gcraState, r ratelab.Rule, now time.Time) (gcraState, told) {
	ms := now.UnixMilli()
	interval := (r.Window.Milliseconds() + r.Limit - 1) / r.Limit
	due := max(s.due, ms)
	earliest := due - (r.Burst-1)*interval
	if ms < earliest {
		return s, told{RetryAfter: until(earliest, now)}
	}
	return gcraState{due + interval}, told{Allowed: true, Remaining: (ms - earliest) / interval}
}

// !-spec

// specStep steps state (nil when the key has none) by one hit of r at
// now, with the specification of r's algorithm.
func specStep(state any, r ratelab.Rule, now time.Time) (any, told) {
	switch r.Algorithm {
	case ratelab.FixedWindow:
		s, _ := state.(fixedState)
		return fixedWindow(s, r, now)
	case ratelab.SlidingCounter:
		s, _ := state.(slidingState)
		return slidingCounter(s, r, now)
	case ratelab.SlidingLog:
		s, _ := state.(logState)
		return slidingLog(s, r, now)
	case ratelab.GCRA:
		s, _ := state.(gcraState)
		return gcra(s, r, now)
	}
	panic("linearizability: no specification of algorithm " + string(r.Algorithm)) // Check refuses such a history
}
