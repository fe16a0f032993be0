package ratelab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrUnavailable is wrapped by the errors of a store that cannot record a
// hit and is configured to fail closed.
var ErrUnavailable = errors.New("ratelab: rate-limit state unavailable")

// ErrBusy is wrapped by the errors of a shared store that did not take
// the hit in time. A database server said so — no free connection, a
// statement or a lock wait out of time, a statement that reached it past
// the hit's deadline — or the hit's time ran out while it waited, for
// whatever it was waiting on; a state file's lock was not free within the
// file store's lock wait. A client cannot tell a store too busy to answer
// from one whose server or lock holder hangs, and sending fast makes the
// first: that is load, not an outage. A store refuses the hit under
// FailOpen as under FailClosed (Failer.Busy), so that no client opens the
// door by sending fast; FailLocal decides it in the process. It wraps
// ErrUnavailable.
var ErrBusy = fmt.Errorf("%w: too busy to count the hit in time", ErrUnavailable)

// FailPolicy says what a store does when it cannot record a hit (the state
// directory is gone, the disk is full, Redis or the database is down).
// Load is not such a case: a store waits its turn for a busy server or a
// held lock within its timeout, and refuses a hit it could not take in
// time (ErrBusy).
//
// Fail-open lets the request through uncounted: right for an abuse brake
// with other backstops, such as the original's "don't create too many
// demos". Fail-closed refuses to decide, and the middleware answers 503:
// right for a security boundary such as login throttling. Fail-local
// decides with an in-memory limiter of the same rule in this process
// alone — the lesson's broken store as a bounded fallback: a pool of K
// long-lived processes lets at most K × limit through while the shared
// store is out, but under CGI, where every request is a new process, it is
// no better than fail-open. The zero value is FailOpen, as in the original.
type FailPolicy int

const (
	FailOpen FailPolicy = iota
	FailClosed
	FailLocal
)

// String returns "open", "closed" or "local".
func (p FailPolicy) String() string {
	switch p {
	case FailOpen:
		return "open"
	case FailClosed:
		return "closed"
	case FailLocal:
		return "local"
	}
	return fmt.Sprintf("FailPolicy(%d)", int(p))
}

// ParseFailPolicy parses "open", "closed" or "local".
func ParseFailPolicy(s string) (FailPolicy, error) {
	for _, p := range []FailPolicy{FailOpen, FailClosed, FailLocal} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("ratelab: unknown fail policy %q: use open, closed or local", s)
}

// Failer applies a store's fail policy to the hits the store could not
// record. A store makes one with NewFailer and keeps it; a Failer is safe
// for concurrent use.
type Failer struct {
	policy FailPolicy
	pkg    string
	log    *slog.Logger
	local  Store
}

// NewFailer returns the Failer of the store named pkg (its package name,
// for errors and log lines), logging to log. local is the in-process store
// FailLocal decides with; it is required for FailLocal and ignored
// otherwise.
func NewFailer(p FailPolicy, pkg string, log *slog.Logger, local Store) (*Failer, error) {
	switch {
	case p != FailOpen && p != FailClosed && p != FailLocal:
		return nil, fmt.Errorf("%s: unknown fail policy %v", pkg, p)
	case p == FailLocal && local == nil:
		return nil, fmt.Errorf("%s: fail policy local needs an in-process store", pkg)
	case p != FailLocal:
		local = nil
	}
	if log == nil {
		log = slog.Default()
	}
	return &Failer{policy: p, pkg: pkg, log: log, local: local}, nil
}

// Policy returns the policy f applies.
func (f *Failer) Policy() FailPolicy { return f.policy }

// !+fail

// Fail applies the policy to a hit of key under r at now that the store
// could not record, for cause. It logs one line naming the store, the
// place (where: a file path, a key) and the cause — under fail-open as a
// hit not counted, or as one counted or not if the cause has a method
// MaybeCounted that reports true (a request sent whose answer was lost).
// Fail-open returns an allowed decision with NotCounted set and no state
// (Decision.Uncounted); fail-closed returns an error wrapping
// ErrUnavailable;
// fail-local returns the in-process store's decision, with Local and
// NotCounted set. If ctx has ended, the caller gave up: Fail returns ctx's
// error under every policy, since nobody waits for the answer. r is the
// rule as the store admitted it (algorithm.Rules.Admit): normalized.
func (f *Failer) Fail(ctx context.Context, where slog.Attr, r Rule, key string, now time.Time, cause error) (Decision, error) {
	if err := gaveUp(ctx); err != nil {
		return Decision{}, fmt.Errorf("%s: %w", f.pkg, err)
	}
	switch f.policy {
	case FailClosed:
		f.log.Error(f.pkg+": hit refused (fail-closed): rate-limit state unavailable", where, "rule", r.Name, "err", cause)
		return Decision{}, fmt.Errorf("%s: %w: %w", f.pkg, ErrUnavailable, cause)
	case FailLocal:
		d, err := f.local.TakeAt(ctx, r, key, now)
		if err != nil {
			return Decision{}, fmt.Errorf("%s: fail-local: %w", f.pkg, err)
		}
		f.log.Warn(f.pkg+": hit decided by this process alone (fail-local): rate-limit state unavailable", where,
			"rule", r.Name, "allowed", d.Allowed, "err", cause)
		d.Local, d.NotCounted = true, cause
		return d, nil
	}
	msg := ": hit not counted (fail-open): rate-limit state unavailable"
	if maybeCounted(cause) {
		msg = ": hit let through, counted or not (fail-open): the store's answer was lost"
	}
	f.log.Warn(f.pkg+msg, where, "rule", r.Name, "err", cause)
	return Decision{Rule: r, Allowed: true, NotCounted: cause}, nil // no state to report: see Decision.Uncounted
}

// maybeCounted reports whether cause says the hit may have been counted
// all the same — the store's request went out and its answer was lost —
// by a method MaybeCounted that reports true.
func maybeCounted(cause error) bool {
	var m interface{ MaybeCounted() bool }
	return errors.As(cause, &m) && m.MaybeCounted()
}

// !-fail

// Busy applies the rule for load to a hit the store did not take in time,
// for cause: a database server too busy to answer, a file's lock not free
// within the lock wait. Fail-open refuses it as fail-closed does, with an
// error wrapping ErrBusy, so that no client opens the door by sending
// fast; fail-local decides it in this process, as Fail does; if ctx has
// ended, Busy returns ctx's error, as Fail does.
func (f *Failer) Busy(ctx context.Context, where slog.Attr, r Rule, key string, now time.Time, cause error) (Decision, error) {
	if f.policy == FailLocal || gaveUp(ctx) != nil {
		return f.Fail(ctx, where, r, key, now, cause)
	}
	f.log.Error(f.pkg+": hit refused: not taken in time (load is not an outage)", where, "rule", r.Name, "err", cause)
	return Decision{}, fmt.Errorf("%s: %w: %w", f.pkg, ErrBusy, cause)
}

// gaveUp is ctx's error if it has ended, or context.DeadlineExceeded once
// its deadline has passed: a network deadline taken from ctx can fire just
// before ctx's own timer does, and is still the caller's deadline.
func gaveUp(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
