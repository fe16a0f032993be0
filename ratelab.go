package ratelab

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Store records hits in fixed windows. It is the contract shared by every
// store in this repository; it is defined here, by its consumer [Limiter].
//
// HitAt records one hit for key at the instant now, in a window of the given
// length, and returns the window after the hit. An error means the store
// could not decide (a fail-closed store whose state is unreachable); such
// errors wrap [ErrUnavailable].
type Store interface {
	HitAt(key string, window time.Duration, now time.Time) (Hit, error)
}

// Hit is a window as a store reports it after one hit: the original's
// {count, reset_at}.
type Hit struct {
	// Count is the number of hits in the window, this one included.
	Count int64
	// ResetAt is the instant the window ends, in whole seconds.
	ResetAt time.Time
	// NotCounted is non-nil when the store failed open: it could not record
	// this hit, reports it as the first of a fresh window so the caller lets
	// it through, and says why here.
	NotCounted error
	// Sliding is set by stores using the sliding-window counter: Count is
	// then a weighted count, and the Limiter asks Sliding when a throttled
	// client may retry.
	Sliding *SlidingState
}

// KeyDigest is how every persistent store names a key: the hex SHA-256 of
// the key. Whatever a key holds — an address, a user name, "../" — its
// digest is 64 safe characters, so it can be a file name or a Redis key
// without escaping, and the store never shows who was counted.
func KeyDigest(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// ErrUnavailable is wrapped by the errors of a store that cannot record a
// hit and is configured to fail closed.
var ErrUnavailable = errors.New("ratelab: rate-limit state unavailable")

// FailPolicy says what a store does when it cannot record a hit (the state
// directory is gone, the disk is full, a lock holder hangs).
//
// Fail-open lets the request through uncounted: right for an abuse brake
// with other backstops, such as the original's "don't create too many
// demos". Fail-closed refuses to decide, and the middleware answers 503:
// right for a security boundary such as login throttling. The zero value is
// FailOpen, as in the original.
type FailPolicy int

const (
	FailOpen FailPolicy = iota
	FailClosed
)

func (p FailPolicy) String() string {
	switch p {
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	}
	return fmt.Sprintf("FailPolicy(%d)", int(p))
}

// !+fail
// Fail applies the policy to a hit a store could not record, for key
// (where names the key as the store knows it, say a file path), at now. It
// logs one line naming the place and the cause. Fail-open returns a fresh
// window's first hit with NotCounted set; fail-closed returns an error
// wrapping ErrUnavailable, prefixed with the store's package name.
func (p FailPolicy) Fail(log *slog.Logger, pkg string, where slog.Attr, now time.Time, window time.Duration, cause error) (Hit, error) {
	if p == FailClosed {
		log.Error(pkg+": hit refused (fail-closed): rate-limit state unavailable", where, "err", cause)
		return Hit{}, fmt.Errorf("%s: %w: %w", pkg, ErrUnavailable, cause)
	}
	log.Warn(pkg+": hit not counted (fail-open): rate-limit state unavailable", where, "err", cause)
	return FreshHit(now, window, cause), nil
}

// !-fail

// ParseFailPolicy parses "open" or "closed".
func ParseFailPolicy(s string) (FailPolicy, error) {
	switch s {
	case "open":
		return FailOpen, nil
	case "closed":
		return FailClosed, nil
	}
	return 0, fmt.Errorf("ratelab: unknown fail policy %q: use open or closed", s)
}

// CheckWindow reports whether window can be used: state is kept in whole
// seconds, as in the original, so a window must be a positive whole number
// of seconds.
func CheckWindow(window time.Duration) error {
	if window < time.Second || window%time.Second != 0 {
		return fmt.Errorf("ratelab: window %v must be a whole number of seconds, at least 1s", window)
	}
	return nil
}

// State is a fixed window as stores keep it, in the original's units:
// a count and the window's end in Unix seconds. Its JSON form is the
// original's file format, {"count":N,"reset_at":UNIX_SECONDS}.
type State struct {
	Count   int64 `json:"count"`
	ResetAt int64 `json:"reset_at"`
}

// Next returns the state after one hit at now, and whether the previous
// window was clamped. The rule is the original's fixed window: a state that
// is absent (the zero State) or whose reset_at is not after now starts a new
// window — count 1, reset_at now+window — and any other state counts the hit
// in its window without moving reset_at.
//
// One case the original does not treat: a reset_at more than one window
// after now. A window never lasts longer than its length, so such a state
// comes from a clock stepped back or a tampered file. Next keeps its count,
// so no hit is forgotten, but clamps reset_at to now+window, so no window
// lasts longer than one window; clamped reports that it did.
func (s State) Next(now time.Time, window time.Duration) (next State, clamped bool) {
	t := now.Unix()
	w := int64(window / time.Second)
	if s.ResetAt <= t {
		return State{Count: 1, ResetAt: t + w}, false
	}
	if s.ResetAt > t+w {
		s.ResetAt, clamped = t+w, true
	}
	if s.Count < 0 {
		s.Count = 0
	}
	if s.Count < 1<<62 { // saturate instead of overflowing on a hostile count
		s.Count++
	}
	return s, clamped
}

// Hit converts the state to the contract's Hit.
func (s State) Hit() Hit {
	return Hit{Count: s.Count, ResetAt: time.Unix(s.ResetAt, 0)}
}

// FreshHit is what a fail-open store reports for a hit it could not record:
// the first hit of a new window, with the reason it was not counted.
func FreshHit(now time.Time, window time.Duration, cause error) Hit {
	h := State{Count: 1, ResetAt: now.Unix() + int64(window/time.Second)}.Hit()
	h.NotCounted = cause
	return h
}
