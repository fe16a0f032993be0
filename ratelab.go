package ratelab

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
	// below zero.
	Remaining int64
	// RetryAfter is, for a refused hit, how long until one more hit would
	// be allowed if none came first; 0 for an allowed hit.
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full allowance
	// if no hit comes first; never negative.
	ResetAfter time.Duration
	// NotCounted is non-nil when the store failed open: it could not record
	// this hit, lets it through, and says why here.
	NotCounted error
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

// ErrUnavailable is wrapped by the errors of a store that cannot record a
// hit and is configured to fail closed.
var ErrUnavailable = errors.New("ratelab: rate-limit state unavailable")

// CheckHit reports whether a hit of r at now can be taken at all: the rule
// is valid and the instant within bounds. Every store calls it first.
func CheckHit(r Rule, now time.Time) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return CheckInstant(now)
}

// FailPolicy says what a store does when it cannot record a hit (the state
// directory is gone, the disk is full, a lock holder hangs, Redis is down).
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

// String returns "open" or "closed".
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

// Fail applies the policy to a hit of r a store could not record. It logs
// one line naming the store (pkg), the place (where, say the file path) and
// the cause. Fail-open returns an allowed decision with NotCounted set, as
// the first hit of a fresh window would be;
// fail-closed returns an error wrapping ErrUnavailable, prefixed with pkg.
// If ctx has ended, the caller gave up: Fail returns ctx's error under
// either policy, since nobody waits for the answer.
func (p FailPolicy) Fail(ctx context.Context, log *slog.Logger, pkg string, where slog.Attr, r Rule, cause error) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, fmt.Errorf("%s: %w", pkg, err)
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		// A network deadline taken from ctx can fire just before ctx's own
		// timer does: still the caller's deadline.
		return Decision{}, fmt.Errorf("%s: %w", pkg, context.DeadlineExceeded)
	}
	if p == FailClosed {
		log.Error(pkg+": hit refused (fail-closed): rate-limit state unavailable", where, "rule", r.Name, "err", cause)
		return Decision{}, fmt.Errorf("%s: %w: %w", pkg, ErrUnavailable, cause)
	}
	log.Warn(pkg+": hit not counted (fail-open): rate-limit state unavailable", where, "rule", r.Name, "err", cause)
	r = r.Normalized()
	return Decision{Rule: r, Allowed: true, Remaining: r.Limit - 1, ResetAfter: r.Window, NotCounted: cause}, nil
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

// Resetter is a store that can forget the state of one key under one
// rule: an operator unblocking a client. A hit that runs at the same time
// lands in the state before the reset or in the fresh one after it, never
// in neither. Every store in this repository is one.
type Resetter interface {
	Reset(ctx context.Context, r Rule, key string) error
}
