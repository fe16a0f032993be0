package breaker

import (
	"context"
	"errors"
	"time"

	"github.com/ratelab/ratelab"
)

// Wrap returns a Store that takes each hit in s unless b is open, and
// turns a hit that failed while b opened into one the policy decides.
// Put it inside ratelab.WithFailPolicy.
func Wrap(s ratelab.Store, b *Breaker) ratelab.Store { return &guarded{s: s, b: b} }

type guarded struct {
	s ratelab.Store
	b *Breaker
}

// TakeAt takes the hit in the store unless the breaker is open.
func (g *guarded) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	if g.b.Down() {
		return ratelab.Decision{}, &downError{}
	}
	d, err := g.s.TakeAt(ctx, r, key, now)
	if err == nil || !errors.Is(err, ratelab.ErrUnavailable) {
		g.b.Answered(time.Now()) // the wall clock, as the watcher reads it: now may be a test's
	}
	var decided interface{ Decided() ratelab.Decision }
	if err != nil && errors.Is(err, ratelab.ErrUnavailable) && !errors.As(err, &decided) && g.b.Down() {
		return ratelab.Decision{}, &downError{cause: err}
	}
	return d, err
}

// downError is a hit the breaker decided: not sent, or sent and not
// answered before the breaker opened (cause). It wraps ErrDown alone:
// not the cause's ErrBusy, which would have the policy refuse it.
type downError struct{ cause error }

func (e *downError) Error() string {
	if e.cause == nil {
		return ErrDown.Error()
	}
	return ErrDown.Error() + ": " + e.cause.Error()
}

func (e *downError) Unwrap() error { return ErrDown }

// MaybeCounted reports whether the hit went to the store: its answer was
// lost, and the store may run it when it wakes.
func (e *downError) MaybeCounted() bool { return e.cause != nil }
