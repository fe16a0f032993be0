package ratelab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Store records hits and decides them by a rule. It is the contract every
// store in this repository implements; it is defined here, by its consumer
// [Limiter].
//
// TakeAt records one hit of key under rule r at the instant now and returns
// the decision, as go-redis/redis_rate's Allow does. The store owns the
// whole step — read the state of (r.Name, key), apply r.Algorithm, write
// the state back — so that processes sharing the store decide together.
// A store never moves a state's time backwards: a hit stamped earlier than
// the state it lands in counts in that state.
//
// A store trusts its caller, as golang.org/x/time/rate's Limiter trusts
// its limit: r is checked and normalized ([Rule.Check]) and now lies
// within [CheckInstant]'s bounds. A [Limiter] checks its rules once, when
// it is made, and each instant before it passes it on.
//
// An error means the store could not decide: ctx ended, the state is
// unreachable (wrapping [ErrUnavailable], which [WithFailPolicy] decides
// by a policy) or the state belongs to another rule of the same name
// (wrapping [ErrRuleConflict]).
type Store interface {
	TakeAt(ctx context.Context, r Rule, key string, now time.Time) (Decision, error)
}

// Decision is a store's answer for one hit.
type Decision struct {
	// Rule is the rule that decided (for a compound Limiter, the binding
	// one), with its defaults filled in.
	Rule Rule
	// Allowed reports whether the hit is within the rule.
	Allowed bool
	// Remaining is how many more hits the rule allows right now, never
	// below zero. It, RetryAfter and ResetAfter are zero for a hit let
	// through Uncounted: nothing is known of the key's state.
	Remaining int64
	// RetryAfter is, for a refused hit, how long until one more hit would
	// be allowed if none came first; 0 for an allowed hit.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full allowance
	// if no hit comes first; never negative.
	ResetAfter time.Duration
	// Source says what decided the hit: the shared store, or, when it
	// could not answer, the fail policy.
	Source Source
	// Cause is why the shared store did not decide (Source is not
	// Shared): its error.
	Cause error
}

// Source says what decided a hit.
type Source int

const (
	// Shared: the store decided on its shared state, which counts the hit.
	Shared Source = iota
	// Local: the store could not answer, and FailLocal decided in this
	// process's own memory, which counts this process's hits only.
	Local
	// Uncounted: the store could not answer, and FailOpen let the hit
	// through. No count is known to hold it — unless the store's answer
	// was lost after the hit reached it (a Redis script runs once it
	// arrives): the shared count errs toward more hits, never fewer.
	Uncounted
)

// String returns "shared", "local" or "uncounted".
func (s Source) String() string {
	switch s {
	case Shared:
		return "shared"
	case Local:
		return "local"
	case Uncounted:
		return "uncounted"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// KeyDigest is how every persistent store names a state: the hex SHA-256
// of the state key ([Rule.StateKey]). Whatever a key holds — an address, a
// user name, "../" — its digest is 64 safe characters, so it can be a file
// name or a Redis key without escaping, and the store never shows who was
// counted.
func KeyDigest(stateKey string) string {
	sum := sha256.Sum256([]byte(stateKey))
	return hex.EncodeToString(sum[:])
}

// Resetter is a store that can forget the state of one key under one
// rule: an operator unblocking a client. A hit that runs at the same time
// lands in the state before the reset or in the fresh one after it, never
// in neither. Every store in this repository is one.
type Resetter interface {
	Reset(ctx context.Context, r Rule, key string) error
}
