package ratelab

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Limiter decides hits by one or more rules, counting them in a [Store]. It
// holds no state of its own: where the counts live is the store's business,
// and that is the point of this repository.
//
// With several rules (say 10 per minute and 100 per hour) the Limiter is a
// compound one, as Symfony's CompoundLimiter: every hit is taken by every
// rule, in order, and the most restrictive decision wins — a refusal over
// an allowance, the longest RetryAfter among refusals, the fewest
// Remaining among allowances. A hit refused by one rule still counts
// against the others where their algorithm counts refused hits, so
// hammering one limit also spends the rest.
//
// A Limiter is safe for concurrent use if its store is. Use [NewLimiter];
// the zero value has no rules and panics.
type Limiter struct {
	store Store
	rules []Rule
}

// NewLimiter returns a Limiter enforcing rules, at least one, each valid
// and no two with the same name. It checks each rule here, once (Rule.Check):
// its stores trust them.
func NewLimiter(store Store, rules ...Rule) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("ratelab: NewLimiter needs a store")
	}
	if len(rules) == 0 {
		return nil, errors.New("ratelab: NewLimiter needs at least one rule")
	}
	l := &Limiter{store: store}
	seen := map[string]bool{}
	for _, r := range rules {
		r, err := r.Check()
		if err != nil {
			return nil, err
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("ratelab: two rules named %q: each rule of a limiter needs its own name", r.Name)
		}
		seen[r.Name] = true
		l.rules = append(l.rules, r)
	}
	return l, nil
}

// Rules returns the limiter's rules, defaults filled in.
func (l *Limiter) Rules() []Rule { return append([]Rule(nil), l.rules...) }

// Allow is shorthand for AllowAt(ctx, key, time.Now()).
func (l *Limiter) Allow(ctx context.Context, key string) (Decision, error) {
	return l.AllowAt(ctx, key, time.Now())
}

// !+allowat

// AllowAt takes one hit of key at now under every rule and returns the
// most restrictive decision. An error means now is out of bounds
// (CheckInstant) or a store could not decide (it wraps [ErrUnavailable]
// for a store without a policy, or one that fails closed); the caller
// should then refuse the request. Rules taken before the error keep their
// count. The decision's Source is the least trustworthy of the rules'
// (Uncounted over Local over Shared), and its Cause joins theirs.
func (l *Limiter) AllowAt(ctx context.Context, key string, now time.Time) (Decision, error) {
	if err := CheckInstant(now); err != nil {
		return Decision{}, err
	}
	var out Decision
	var causes []error
	source := Shared
	for i, r := range l.rules {
		d, err := l.store.TakeAt(ctx, r, key, now)
		if err != nil {
			return Decision{}, err
		}
		source, causes = max(source, d.Source), append(causes, d.Cause)
		if i == 0 || stricter(d, out) {
			out = d
		}
	}
	out.Source, out.Cause = source, errors.Join(causes...)
	return out, nil
}

// stricter reports whether a binds more than b: a refusal over an
// allowance, then the longer wait, then the fewer hits remaining.
func stricter(a, b Decision) bool {
	switch {
	case a.Allowed != b.Allowed:
		return !a.Allowed
	case !a.Allowed:
		return a.RetryAfter > b.RetryAfter
	case a.Remaining != b.Remaining:
		return a.Remaining < b.Remaining
	}
	return a.ResetAfter > b.ResetAfter
}

// !-allowat

// CeilSeconds returns d in whole seconds, rounded up, and never below 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
