package algorithm

import (
	"fmt"
	"time"

	"github.com/ratelab/ratelab"
)

// Result is one step's outcome.
type Result struct {
	Decision ratelab.Decision
	// State is the new state's encoding, appended to the dst given to
	// Take; nil when the state is to be left exactly as it was (a hit
	// refused by an algorithm that does not record refusals).
	State []byte
	// Replaced is non-nil when no rule could have written the old state —
	// it cannot be decoded, or it records an instant further ahead of the
	// hit than any rule writes — and the hit was taken on a fresh state
	// instead; it says what was wrong.
	Replaced error
}

// Take applies one hit of r at now to old, the state's encoding (empty
// when absent), and appends the new encoding to dst. r is checked —
// valid and normalized (ratelab.Rule.Check) — and is not checked again
// here. An error wraps ratelab.ErrRuleConflict — old belongs to another
// rule of the same name, and must be left untouched — or, for an unknown
// algorithm, ratelab.ErrUncheckedRule.
// A state no rule could have written — one that cannot be decoded, or
// lies further ahead of now than any rule writes (see the package
// documentation) — is replaced by a fresh one, on which the hit is
// decided: Result.Replaced says why.
func Take(dst, old []byte, r ratelab.Rule, now time.Time) (Result, error) {
	if n := MaxStateSize(r); len(old) > n {
		return takeFresh(dst, r, now, fmt.Errorf("algorithm: state is larger than %d bytes", n))
	}
	var res Result
	var err error
	switch r.Algorithm {
	case ratelab.FixedWindow:
		res, err = takeState(dst, old, r, now, DecodeFixed)
	case ratelab.SlidingCounter:
		res, err = takeState(dst, old, r, now, DecodeSliding)
	case ratelab.SlidingLog:
		res, err = takeState(dst, old, r, now, DecodeLog)
	case ratelab.GCRA:
		res, err = takeState(dst, old, r, now, DecodeGCRA)
	default:
		return Result{}, fmt.Errorf("algorithm: unknown algorithm %q: %w", r.Algorithm, ratelab.ErrUncheckedRule)
	}
	if err != nil {
		return Result{}, err
	}
	res.Decision.Rule = r
	return res, nil
}

// state is one algorithm's state as Take drives it: its own step, which
// says whether the state changed, and its bound on how far ahead of a hit
// a rule may have written it (see the package documentation).
type state[S any] interface {
	step(r ratelab.Rule, now time.Time) (next S, d ratelab.Decision, changed bool, err error)
	ahead(now time.Time) error
	Append(dst []byte) []byte
}

// takeState is Take of one algorithm: decode old, replace it with the
// absent state if no rule could have written it, step, and write back a
// state that changed, was replaced or was absent.
func takeState[S state[S]](dst, old []byte, r ratelab.Rule, now time.Time, decode func([]byte) (S, error)) (Result, error) {
	prev, derr := decode(old)
	if derr == nil {
		derr = prev.ahead(now)
	}
	if derr != nil {
		var absent S
		prev = absent
	}
	next, d, changed, err := prev.step(r, now)
	res := Result{Decision: d, Replaced: derr}
	if changed || derr != nil || len(old) == 0 {
		res.State = next.Append(dst)
	}
	return res, err
}

// The steps of Fixed and Sliding report no change of their own: a state
// equal to the old one is unchanged.
func (s Fixed) step(r ratelab.Rule, now time.Time) (Fixed, ratelab.Decision, bool, error) {
	next, d, err := s.Take(r, now)
	return next, d, next != s, err
}

func (s Sliding) step(r ratelab.Rule, now time.Time) (Sliding, ratelab.Decision, bool, error) {
	next, d, err := s.Take(r, now)
	return next, d, next != s, err
}

func (s Log) step(r ratelab.Rule, now time.Time) (Log, ratelab.Decision, bool, error) {
	return s.Take(r, now)
}

func (s GCRAState) step(r ratelab.Rule, now time.Time) (GCRAState, ratelab.Decision, bool, error) {
	return s.Take(r, now)
}

// takeFresh takes the hit on the absent state, reporting why the old one
// was dropped.
func takeFresh(dst []byte, r ratelab.Rule, now time.Time, why error) (Result, error) {
	res, err := Take(dst, nil, r, now)
	res.Replaced = why
	return res, err
}

// Suffix is how a state's file or key name ends for algorithm a, so that
// one rule name under two algorithms never shares a state. The fixed
// window's is the PHP original's ".json".
func Suffix(a ratelab.Algorithm) string {
	switch a {
	case ratelab.SlidingCounter:
		return ".sliding.json"
	case ratelab.SlidingLog:
		return ".log.json"
	case ratelab.GCRA:
		return ".gcra.json"
	}
	return ".json"
}

// MaxStateSize is the largest valid encoding of a state of any rule of
// r's algorithm (r normalized): a store reads at most one byte more, and treats more as
// corrupt. For a sliding log it is that of a log at ratelab.MaxLogLimit,
// whatever r.Limit: a log filled before the limit was lowered is valid,
// and Take trims it to the new limit rather than replacing it.
func MaxStateSize(r ratelab.Rule) int {
	if r.Algorithm == ratelab.SlidingLog {
		return maxLogSize
	}
	return 160
}

// maxLogSize is the largest encoding of a sliding log: ratelab.MaxLogLimit
// instants of at most 15 bytes each, comma included, and the rest.
const maxLogSize = 64 + 16*ratelab.MaxLogLimit

// since is max(0, at − now), at and now in Unix milliseconds.
func since(at, nowMs int64) time.Duration { return Millis(at - nowMs) }

// MaxWait is the longest RetryAfter or ResetAfter a decision reports. The
// instants ratelab accepts span a thousand years, more than a
// time.Duration holds; a state that far ahead of a hit is reported as
// this wait instead of overflowing.
const MaxWait = 100 * 365 * 24 * time.Hour

// Millis converts a wait in milliseconds to a Duration, never below 0 and
// never above MaxWait.
func Millis(ms int64) time.Duration {
	return time.Duration(min(max(ms, 0), int64(MaxWait/time.Millisecond))) * time.Millisecond
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// WindowConflict is the error of a hit of r on a state that records
// another window, stored (seconds).
func WindowConflict(r ratelab.Rule, stored int64) error {
	return &ratelab.ConflictError{Rule: r, Other: fmt.Sprintf("window %v", time.Duration(stored)*time.Second)}
}

// FixedConflict is the error of a fixed-window hit of r on a window that
// ends ahead (seconds) after the hit, beyond r.Window + MaxSkew.
func FixedConflict(r ratelab.Rule, ahead int64) error {
	return &ratelab.ConflictError{Rule: r, Other: fmt.Sprintf("a window ending %v after this hit", Millis(ahead*1000))}
}
