package ratelab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// An error means the store could not decide: the rule or instant is
// invalid, ctx ended, a fail-closed store's state is unreachable (wrapping
// [ErrUnavailable]) or the state belongs to another rule of the same name
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
	// through uncounted (Uncounted): nothing is known of the key's state.
	Remaining int64
	// RetryAfter is, for a refused hit, how long until one more hit would
	// be allowed if none came first; 0 for an allowed hit.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full allowance
	// if no hit comes first; never negative.
	ResetAfter time.Duration
	// NotCounted is non-nil when the store could not confirm that it
	// recorded this hit in its shared state, and says why: under FailOpen
	// the hit is let through, under FailLocal it was decided by the
	// process alone (Local). A hit whose answer was lost after it was
	// sent — a timeout, a reset connection — may have been counted all the
	// same, as a Redis script runs once it arrives: the shared count errs
	// toward more hits, never fewer.
	NotCounted error
	// Local reports a decision made under FailLocal by the process's own
	// in-memory limiter, because the shared store could not answer: it
	// counts this process's hits only.
	Local bool
}

// Uncounted reports whether d let a hit through that no count holds — a
// fail-open pass, whose Remaining and waits say nothing of the key's
// state. A fail-local decision (Local) is counted, in the process.
func (d Decision) Uncounted() bool { return d.NotCounted != nil && !d.Local }

// KeyDigest is how every persistent store names a state: the hex SHA-256
// of the state key ([Rule.StateKey]). Whatever a key holds — an address, a
// user name, "../" — its digest is 64 safe characters, so it can be a file
// name or a Redis key without escaping, and the store never shows who was
// counted.
func KeyDigest(stateKey string) string {
	sum := sha256.Sum256([]byte(stateKey))
	return hex.EncodeToString(sum[:])
}

// CheckHit reports whether a hit of r at now can be taken at all: the rule
// is valid and the instant within bounds. Every store calls it first.
func CheckHit(r Rule, now time.Time) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return CheckInstant(now)
}

// Resetter is a store that can forget the state of one key under one
// rule: an operator unblocking a client. A hit that runs at the same time
// lands in the state before the reset or in the fresh one after it, never
// in neither. Every store in this repository is one.
type Resetter interface {
	Reset(ctx context.Context, r Rule, key string) error
}
