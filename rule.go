package ratelab

import (
	"errors"
	"fmt"
	"time"

	"github.com/ratelab/ratelab/internal/choices"
)

// Algorithm names the rule a store applies to a key's hits.
type Algorithm string

const (
	// FixedWindow is the original's rule: a window opens at a key's first
	// hit and lasts one window length; every hit counts, refused or not.
	// Cheap and simple, but up to 2 × limit hits can land in one
	// window-long span across a reset.
	FixedWindow Algorithm = "fixed"
	// SlidingCounter is the sliding-window counter Cloudflare published:
	// windows aligned to the clock, and a hit is weighed against this
	// window's count plus the previous window's count scaled by how much of
	// it still overlaps the last window length. Every hit counts. It bounds
	// the edge burst below 2 × limit at the price of an approximation.
	SlidingCounter Algorithm = "sliding"
	// SlidingLog keeps the instant of every allowed hit in the last window
	// and allows one more while fewer than limit are in the window-long span
	// ending now, both ends included. It is exact — never more than limit
	// in any such span — and keeps at most limit instants per key; refused
	// hits are not recorded.
	SlidingLog Algorithm = "log"
	// GCRA is the generic cell rate algorithm, a token bucket kept as one
	// instant: hits are due one every window/limit, and up to Rule.Burst may
	// come at once. At most limit + burst fit in any window-long span;
	// refused hits are not recorded.
	GCRA Algorithm = "gcra"
)

// Algorithms lists every algorithm, in the order the documentation uses.
func Algorithms() []Algorithm { return []Algorithm{FixedWindow, SlidingCounter, SlidingLog, GCRA} }

// ParseAlgorithm parses "fixed", "sliding", "log" or "gcra".
func ParseAlgorithm(s string) (Algorithm, error) {
	for _, a := range Algorithms() {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("ratelab: unknown algorithm %q: use %s", s, choices.Or(Algorithms()))
}

// String returns the algorithm's name: "fixed", "sliding", "log" or "gcra".
func (a Algorithm) String() string { return string(a) }

// Bounds on a rule and on instants. They keep every step's arithmetic far
// from overflow, in Go's int64 and in the doubles of a Redis script alike.
const (
	// MaxWindow is the longest window a rule may have.
	MaxWindow = 366 * 24 * time.Hour
	// MaxLimit is the largest limit (and GCRA burst) a rule may have.
	MaxLimit = 1 << 27
	// MaxLogLimit is the largest limit of a SlidingLog rule, whose state
	// holds one instant per allowed hit.
	MaxLogLimit = 1000
	// MaxSkew is how far ahead of a hit's instant a fixed window may end
	// beyond its length and still be this rule's: a hit stamped up to
	// MaxSkew late (read before a lock wait, or on a host whose clock is
	// behind) counts in the current window. A window that ends further
	// ahead belongs to another rule of the same name (see ErrRuleConflict).
	MaxSkew = time.Minute
	// MaxUnix ends the instants a hit may carry, in Unix seconds: they run
	// from the epoch to 3000-01-01T00:00:00Z, this one excluded.
	MaxUnix = 32503680000
)

// CheckInstant reports an error unless t lies between 1970-01-01 and
// 3000-01-01 (UTC): state is kept in Unix time, and an absurd instant is a
// caller's bug, not a hit.
func CheckInstant(t time.Time) error {
	if u := t.Unix(); u < 0 || u >= MaxUnix {
		return fmt.Errorf("ratelab: instant %s is outside 1970-01-01 to 3000-01-01", t.UTC().Format(time.RFC3339))
	}
	return nil
}

// Rule is what a limiter enforces for one kind of request: "demo-start",
// 30 per hour, fixed window. The zero value is not a valid rule.
//
// A rule's Name is its identity: a store keeps the state of (Name, key)
// apart from every other rule's, so two rules on one key never shorten,
// reset or consume each other's windows. The store's key for a hit is
// Name + ":" + key (see [Rule.StateKey]): the original's key
// "demo-start:ip:203.0.113.7" is rule "demo-start" counting key
// "ip:203.0.113.7", which keeps the original's fixed-window file where PHP
// writes it. Two rules with one name and algorithm but another window are
// a configuration error; stores report it as [ErrRuleConflict].
type Rule struct {
	// Name names the rule: 1 to 64 letters, digits, '.', '_' or '-'.
	Name string
	// Limit is how many hits a window allows, 1 to MaxLimit (MaxLogLimit
	// for SlidingLog).
	Limit int64
	// Window is the span the limit applies to: whole seconds, 1s to
	// MaxWindow.
	Window time.Duration
	// Algorithm is the rule applied; "" means FixedWindow.
	Algorithm Algorithm
	// Burst is how many hits GCRA allows at once, 0 to Limit; 0 means 1.
	// Other algorithms ignore it.
	Burst int64
	// Refusals says whether a refused hit counts against the rule; the
	// zero value is the algorithm's own choice (see Refusals).
	Refusals Refusals
}

// ParseRefusals parses "default", "count" or "ignore".
func ParseRefusals(s string) (Refusals, error) {
	all := []Refusals{DefaultRefusals, CountRefusals, IgnoreRefusals}
	for _, x := range all {
		if x.String() == s {
			return x, nil
		}
	}
	return 0, fmt.Errorf("ratelab: unknown refusals %q: use %s", s, choices.Or(all))
}

// Refusals says whether a hit the rule refuses still counts against it.
// Counted refusals make hammering self-defeating — a client that keeps
// sending stays refused, since its refused hits keep filling the window —
// at the price of locking out a client that retries too eagerly. Ignored
// refusals let a client through at the limit whatever it sends, and keep a
// sliding log at no more than limit instants.
type Refusals int

const (
	// DefaultRefusals is the algorithm's own: counted by the fixed window
	// (as the original counts every hit) and the sliding counter, ignored
	// by the sliding log and GCRA.
	DefaultRefusals Refusals = iota
	// CountRefusals counts every hit, refused or not. The sliding log
	// then keeps the latest limit instants, refused ones included; GCRA
	// moves its arrival time on by one interval per refused hit, at most
	// one window past a full burst.
	CountRefusals
	// IgnoreRefusals counts only allowed hits.
	IgnoreRefusals
)

// String returns "default", "count" or "ignore".
func (x Refusals) String() string {
	switch x {
	case CountRefusals:
		return "count"
	case IgnoreRefusals:
		return "ignore"
	}
	return "default"
}

// String describes the rule, as in `"demo-start" 30 per 1h0m0s (fixed)`.
func (r Rule) String() string {
	s := fmt.Sprintf("%q %d per %v (%s", r.Name, r.Limit, r.Window, r.algorithm())
	if r.algorithm() == GCRA {
		s += fmt.Sprintf(", burst %d", r.burst())
	}
	return s + ")"
}

func (r Rule) algorithm() Algorithm {
	if r.Algorithm == "" {
		return FixedWindow
	}
	return r.Algorithm
}

func (r Rule) burst() int64 { return max(r.Burst, 1) }

// Normalized returns r with its defaults filled in: the algorithm
// FixedWindow when empty, for GCRA a burst of at least 1, and the
// algorithm's own Refusals.
func (r Rule) Normalized() Rule {
	r.Algorithm = r.algorithm()
	if r.Algorithm == GCRA {
		r.Burst = r.burst()
	} else {
		r.Burst = 0
	}
	if r.Refusals == DefaultRefusals {
		r.Refusals = CountRefusals
		if r.Algorithm == SlidingLog || r.Algorithm == GCRA {
			r.Refusals = IgnoreRefusals
		}
	}
	return r
}

// Check returns r with its defaults filled in (Normalized), or the first
// thing wrong with it (Validate): the rule every store trusts.
func (r Rule) Check() (Rule, error) {
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	return r.Normalized(), nil
}

// Validate reports the first thing wrong with r, in words a user can act on.
func (r Rule) Validate() error {
	if err := checkName(r.Name); err != nil {
		return err
	}
	if _, err := ParseAlgorithm(string(r.algorithm())); err != nil {
		return err
	}
	if r.Window < time.Second || r.Window > MaxWindow || r.Window%time.Second != 0 {
		return fmt.Errorf("ratelab: rule %q: window %v must be a whole number of seconds from 1s to %v", r.Name, r.Window, MaxWindow)
	}
	maxLimit := int64(MaxLimit)
	if r.algorithm() == SlidingLog {
		maxLimit = MaxLogLimit
	}
	if r.Limit < 1 || r.Limit > maxLimit {
		return fmt.Errorf("ratelab: rule %q: limit %d must be from 1 to %d", r.Name, r.Limit, maxLimit)
	}
	if r.Refusals < DefaultRefusals || r.Refusals > IgnoreRefusals {
		return fmt.Errorf("ratelab: rule %q: unknown refusals %d", r.Name, r.Refusals)
	}
	if r.Burst < 0 || r.Burst > r.Limit {
		return fmt.Errorf("ratelab: rule %q: burst %d must be from 0 to the limit, %d", r.Name, r.Burst, r.Limit)
	}
	if r.algorithm() == GCRA && r.Limit > r.Window.Milliseconds() {
		return fmt.Errorf("ratelab: rule %q: GCRA spaces hits at least 1ms apart; limit %d per %v is finer", r.Name, r.Limit, r.Window)
	}
	return nil
}

func checkName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("ratelab: rule name %q must be 1 to 64 characters", name)
	}
	for _, c := range []byte(name) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("ratelab: rule name %q may hold only letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}

// StateKey is the key a store keeps (r, key)'s state under:
// r.Name + ":" + key. A name holds no ':', so no two (rule, key) pairs
// share a StateKey.
func (r Rule) StateKey(key string) string { return r.Name + ":" + key }

// ErrUncheckedRule is wrapped by the error of a store given a rule that
// was not checked (Rule.Check) — an unknown algorithm, say: a caller's
// bug, which no fail policy decides. A Limiter checks its rules when it is
// made; a store trusts them.
var ErrUncheckedRule = errors.New("ratelab: a store takes a checked rule (Rule.Check), as a Limiter passes it")

// ErrRuleConflict is wrapped by the errors of a hit whose state belongs to
// another rule of the same name: one with another window, found by the
// window a state records, or by a fixed window that ends further ahead than
// this rule's window plus MaxSkew. The state is left as it was.
var ErrRuleConflict = errors.New("ratelab: two rules share one name")

// ConflictError reports a hit of Rule that met a state written by another
// rule of the same name and algorithm, described by Other.
type ConflictError struct {
	Rule  Rule
	Other string // the other rule as the state describes it, e.g. "window 1h0m0s"
}

// Error says which rule met which state.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("ratelab: rule %v met the state of another rule named %q (%s): "+
		"rules that differ need distinct names (or this host's clock is more than %v behind the one that wrote the state)",
		e.Rule, e.Rule.Name, e.Other, MaxSkew)
}

// Unwrap returns ErrRuleConflict.
func (e *ConflictError) Unwrap() error { return ErrRuleConflict }
