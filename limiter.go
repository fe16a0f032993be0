package ratelab

import (
	"errors"
	"fmt"
	"time"
)

// Limiter allows at most limit hits per key in each fixed window, counting
// them in a [Store]. It holds no state of its own: where the counts live is
// the store's business, and that is the point of this repository.
//
// A Limiter is safe for concurrent use if its store is. Use [NewLimiter];
// the zero value has no store and panics.
type Limiter struct {
	store  Store
	limit  int64
	window time.Duration
}

// NewLimiter returns a Limiter allowing limit hits per window. The limit must
// be positive and the window a whole number of seconds (see [CheckWindow]).
func NewLimiter(store Store, limit int, window time.Duration) (*Limiter, error) {
	if store == nil {
		return nil, errors.New("ratelab: NewLimiter needs a store")
	}
	if limit <= 0 {
		return nil, fmt.Errorf("ratelab: limit %d must be positive", limit)
	}
	if err := CheckWindow(window); err != nil {
		return nil, err
	}
	return &Limiter{store: store, limit: int64(limit), window: window}, nil
}

// Limit returns the number of hits allowed per window.
func (l *Limiter) Limit() int { return int(l.limit) }

// Window returns the window's length.
func (l *Limiter) Window() time.Duration { return l.window }

// Decision is a Limiter's answer for one hit.
type Decision struct {
	// Allowed is true while the window's count is at most the limit.
	Allowed bool
	// Count is the window's count after this hit, and Limit the limit.
	Count, Limit int64
	// Remaining is how many more hits the window allows: limit − count,
	// never below zero.
	Remaining int64
	// ResetAt is when the window ends.
	ResetAt time.Time
	// ResetIn is max(0, reset_at − now) in whole seconds: the Retry-After of
	// a throttled hit.
	ResetIn time.Duration
	// NotCounted is non-nil when the store failed open and this hit was let
	// through without being counted.
	NotCounted error
}

// Allow is shorthand for AllowAt(key, time.Now()).
func (l *Limiter) Allow(key string) (Decision, error) {
	return l.AllowAt(key, time.Now())
}

// AllowAt records one hit for key at now and decides it. An error means the
// store could not decide (it wraps [ErrUnavailable] for a fail-closed store);
// the caller should then refuse the request.
func (l *Limiter) AllowAt(key string, now time.Time) (Decision, error) {
	h, err := l.store.HitAt(key, l.window, now)
	if err != nil {
		return Decision{}, err
	}
	return l.decide(h, now), nil
}

func (l *Limiter) decide(h Hit, now time.Time) Decision {
	if h.Count > l.limit && h.Sliding != nil {
		h.ResetAt = h.Sliding.RetryAt(now, l.window, l.limit)
	}
	return Decision{
		Allowed:    h.Count <= l.limit,
		Count:      h.Count,
		Limit:      l.limit,
		Remaining:  max(0, l.limit-h.Count),
		ResetAt:    h.ResetAt,
		ResetIn:    time.Duration(max(0, h.ResetAt.Unix()-now.Unix())) * time.Second,
		NotCounted: h.NotCounted,
	}
}
