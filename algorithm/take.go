package algorithm

import (
	"fmt"
	"sync"
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
// when absent), and appends the new encoding to dst. r must be valid
// (see ratelab.CheckHit). An error wraps ratelab.ErrRuleConflict: old
// belongs to another rule of the same name, and must be left untouched.
// A state no rule could have written — one that cannot be decoded, or
// lies further ahead of now than any rule writes (see the package
// documentation) — is replaced by a fresh one, on which the hit is
// decided: Result.Replaced says why.
func Take(dst, old []byte, r ratelab.Rule, now time.Time) (Result, error) {
	r = r.Normalized()
	if n := MaxStateSize(r); len(old) > n {
		return takeFresh(dst, r, now, fmt.Errorf("algorithm: state is larger than %d bytes", n))
	}
	var res Result
	var err error
	switch r.Algorithm {
	case ratelab.FixedWindow:
		res, err = takeFixed(dst, old, r, now)
	case ratelab.SlidingCounter:
		res, err = takeSliding(dst, old, r, now)
	case ratelab.SlidingLog:
		res, err = takeLog(dst, old, r, now)
	case ratelab.GCRA:
		res, err = takeGCRA(dst, old, r, now)
	default:
		return Result{}, fmt.Errorf("algorithm: unknown algorithm %q", r.Algorithm)
	}
	if err != nil {
		return Result{}, err
	}
	res.Decision.Rule = r
	return res, nil
}

// takeFixed is Take of a fixed window. The state is written back when it
// changed, was replaced or was absent.
func takeFixed(dst, old []byte, r ratelab.Rule, now time.Time) (res Result, err error) {
	prev, derr := DecodeFixed(old)
	if derr == nil {
		if derr = prev.ahead(now.Unix()); derr != nil {
			prev = Fixed{}
		}
	}
	var st Fixed
	st, res.Decision, err = prev.Take(r, now)
	if st != prev || derr != nil || len(old) == 0 {
		res.State = st.Append(dst)
	}
	res.Replaced = derr
	return res, err
}

// takeSliding is Take of a sliding-window counter, written back as
// takeFixed's.
func takeSliding(dst, old []byte, r ratelab.Rule, now time.Time) (res Result, err error) {
	prev, derr := DecodeSliding(old)
	if derr == nil {
		if derr = prev.ahead(now.Unix()); derr != nil {
			prev = Sliding{}
		}
	}
	var st Sliding
	st, res.Decision, err = prev.Take(r, now)
	if st != prev || derr != nil || len(old) == 0 {
		res.State = st.Append(dst)
	}
	res.Replaced = derr
	return res, err
}

// takeLog is Take of a sliding log. A fresh log's hit is always allowed,
// so a replaced state is always written back.
func takeLog(dst, old []byte, r ratelab.Rule, now time.Time) (res Result, err error) {
	st, derr := DecodeLog(old)
	if derr == nil {
		if derr = st.ahead(now.UnixMilli()); derr != nil {
			st = Log{}
		}
	}
	var changed bool
	st, res.Decision, changed, err = st.Take(r, now)
	if changed {
		res.State = st.Append(dst)
	}
	res.Replaced = derr
	return res, err
}

// takeGCRA is Take of GCRA; a replaced state is written back as takeLog's.
func takeGCRA(dst, old []byte, r ratelab.Rule, now time.Time) (res Result, err error) {
	st, derr := DecodeGCRA(old)
	if derr == nil {
		if derr = st.ahead(now.UnixMilli()); derr != nil {
			st = GCRAState{}
		}
	}
	var changed bool
	st, res.Decision, changed, err = st.Take(r, now)
	if changed {
		res.State = st.Append(dst)
	}
	res.Replaced = derr
	return res, err
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
// r's algorithm: a store reads at most one byte more, and treats more as
// corrupt. For a sliding log it is that of a log at ratelab.MaxLogLimit,
// whatever r.Limit: a log filled before the limit was lowered is valid,
// and Take trims it to the new limit rather than replacing it.
func MaxStateSize(r ratelab.Rule) int {
	if r.Normalized().Algorithm == ratelab.SlidingLog {
		return maxLogSize
	}
	return 160
}

// maxLogSize is the largest encoding of a sliding log: ratelab.MaxLogLimit
// instants of at most 15 bytes each, comma included, and the rest.
const maxLogSize = 64 + 16*ratelab.MaxLogLimit

// Rules remembers, for one store, the rule it has taken hits of under each
// name and algorithm, so that two different rules sharing a name inside one
// process are reported at their first hit, naming both, rather than
// counting into each other's state. The zero value is ready; it is safe for
// concurrent use.
type Rules struct {
	m sync.Map // ruleID → ratelab.Rule
}

type ruleID struct {
	name string
	alg  ratelab.Algorithm
}

// Admit is what every store checks before it takes a hit of r at now:
// the rule and instant are valid (ratelab.CheckHit), and no other rule
// with r's name and algorithm was seen before (Check).
func (rs *Rules) Admit(r ratelab.Rule, now time.Time) error {
	if err := ratelab.CheckHit(r, now); err != nil {
		return err
	}
	return rs.Check(r)
}

// Check reports a *ratelab.ConflictError if another rule with r's name and
// algorithm was seen before.
func (rs *Rules) Check(r ratelab.Rule) error {
	r = r.Normalized()
	id := ruleID{r.Name, r.Algorithm}
	if v, ok := rs.m.Load(id); ok {
		if seen := v.(ratelab.Rule); seen != r {
			return &ratelab.ConflictError{Rule: r, Other: seen.String()}
		}
		return nil
	}
	if v, loaded := rs.m.LoadOrStore(id, r); loaded && v.(ratelab.Rule) != r {
		return &ratelab.ConflictError{Rule: r, Other: v.(ratelab.Rule).String()}
	}
	return nil
}

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
