package algorithm

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ratelab/ratelab"
)

// Fixed is a fixed window as the PHP original keeps it: the hits counted in
// the window and the window's end, in Unix seconds. The zero value is the
// absent state.
type Fixed struct {
	Count   int64
	ResetAt int64
}

// maxFixedCount is where a fixed window's count saturates instead of
// overflowing on a hostile state; it stays exact in a Redis script's doubles.
const maxFixedCount = 1 << 40

// !+fixed

// Take counts one hit of r at now. The rule is the original's: a state
// that is absent or whose reset_at is not after now starts a new window —
// count 1, reset_at now + window — and any other state counts the hit in
// its window without moving reset_at. Every hit counts, refused or not (as
// in the original; IgnoreRefusals counts only allowed ones), and a hit is
// allowed while the count is at most the limit: with a limit of 30 the
// 31st is the first refused, told to retry when the window ends.
//
// A hit stamped before the window began simply counts in it: reset_at lies
// ahead, so the window is live. But a window cannot end more than one
// window length after a hit of its own rule, give or take MaxSkew; one that
// does was written by another rule of the same name with a longer window,
// and Take reports the conflict instead of touching it.
func (s Fixed) Take(r ratelab.Rule, now time.Time) (Fixed, ratelab.Decision, error) {
	t, nowMs := now.Unix(), now.UnixMilli()
	w := int64(r.Window / time.Second)
	if s.ResetAt-t > w+int64(ratelab.MaxSkew/time.Second) {
		return s, ratelab.Decision{}, FixedConflict(r, s.ResetAt-t)
	}
	if s.ResetAt <= t {
		s = Fixed{ResetAt: t + w}
	}
	if r.Refusals == ratelab.IgnoreRefusals && s.Count >= r.Limit {
		// Refused, not counted; a hostile count cannot overflow into an
		// allowance.
		return s, decideFixed(r, min(s.Count, maxFixedCount-1)+1, s.ResetAt, nowMs), nil
	}
	s.Count = min(max(s.Count, 0), maxFixedCount-1) + 1
	return s, decideFixed(r, s.Count, s.ResetAt, nowMs), nil
}

// decideFixed is the decision for a window holding count hits, this one
// included, that ends at resetAt (Unix seconds).
func decideFixed(r ratelab.Rule, count, resetAt, nowMs int64) ratelab.Decision {
	d := ratelab.Decision{
		Allowed:    count <= r.Limit,
		Remaining:  max(0, r.Limit-count),
		ResetAfter: since(resetAt*1000, nowMs),
	}
	if !d.Allowed {
		d.RetryAfter = d.ResetAfter
	}
	return d
}

// !-fixed

// FixedBounds are what a fixed-window step compares a state with, in Unix
// seconds, for a store whose step runs elsewhere — a SQL statement, a
// Redis script — and must match Take's.
type FixedBounds struct {
	T        int64 // the hit's instant
	Fresh    int64 // a new window's reset_at: T + window
	Live     int64 // the latest reset_at of this rule's window: Fresh + MaxSkew
	Cap      int64 // where a store may stop a count: limit + 1
	MaxCount int64 // the largest count any rule leaves at such a cap: MaxLimit + 1
	MaxReset int64 // the latest reset_at any rule writes: T + MaxWindow + MaxSkew
}

// BoundsOf returns the bounds of a fixed-window hit of r at now. A window
// that ends after Live but by MaxReset is another rule's (a conflict); a
// reset_at after MaxReset, or a count outside [0, MaxCount], was written by
// no rule: the state is corrupt, and replaced by a fresh window.
func BoundsOf(r ratelab.Rule, now time.Time) FixedBounds {
	t := now.Unix()
	fresh := t + int64(r.Window/time.Second)
	return FixedBounds{T: t, Fresh: fresh, Live: fresh + maxSkewSeconds, Cap: r.Limit + 1,
		MaxCount: ratelab.MaxLimit + 1, MaxReset: t + maxWindowSeconds + maxSkewSeconds}
}

// FixedDecision is the decision of rule r at now for a fixed window that
// holds count hits, this one included, and ends at resetAt (Unix seconds):
// for a store whose state step runs elsewhere, as the Redis script does.
// r is checked (ratelab.Rule.Check).
func FixedDecision(r ratelab.Rule, count, resetAt int64, now time.Time) ratelab.Decision {
	d := decideFixed(r, count, resetAt, now.UnixMilli())
	d.Rule = r
	return d
}

// Append appends the state's encoding to dst, byte for byte as PHP's
// json_encode(['count' => N, 'reset_at' => T]) writes it.
func (s Fixed) Append(dst []byte) []byte {
	dst = append(dst, `{"count":`...)
	dst = strconv.AppendInt(dst, s.Count, 10)
	dst = append(dst, `,"reset_at":`...)
	dst = strconv.AppendInt(dst, s.ResetAt, 10)
	return append(dst, '}')
}

// DecodeFixed parses a fixed-window state. Empty input is the absent
// state. Anything else must be one JSON object with an integer count of at
// least zero and a reset_at after the epoch, before 3000 plus two windows.
func DecodeFixed(b []byte) (Fixed, error) {
	if len(b) == 0 {
		return Fixed{}, nil
	}
	v, ok := scanFlat(b, `{"count":`, `,"reset_at":`)
	if ok && v[1] > 0 && v[1] < maxStateUnix {
		return Fixed{Count: v[0], ResetAt: v[1]}, nil
	}
	var raw struct {
		Count   *int64 `json:"count"`
		ResetAt *int64 `json:"reset_at"`
	}
	if err := decodeObject(b, &raw); err != nil {
		return Fixed{}, err
	}
	switch {
	case raw.Count == nil || raw.ResetAt == nil:
		return Fixed{}, errors.New(`algorithm: state lacks "count" or "reset_at"`)
	case *raw.Count < 0:
		return Fixed{}, fmt.Errorf("algorithm: state count %d is negative", *raw.Count)
	case *raw.ResetAt <= 0 || *raw.ResetAt >= maxStateUnix:
		return Fixed{}, fmt.Errorf("algorithm: state reset_at %d is not a Unix time before the year 3002", *raw.ResetAt)
	}
	return Fixed{Count: *raw.Count, ResetAt: *raw.ResetAt}, nil
}
