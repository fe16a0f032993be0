package ratelab

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ratelab/ratelab/internal/choices"
	"github.com/ratelab/ratelab/internal/descriptors"
	"github.com/ratelab/ratelab/internal/logevery"
)

// ErrUnavailable is wrapped by the errors of a store that cannot reach
// the state of a hit: the state directory is gone, the disk is full,
// Redis or the database is down. [WithFailPolicy] decides such hits.
var ErrUnavailable = errors.New("ratelab: rate-limit state unavailable")

// ErrBusy is wrapped by the errors of a shared store that did not take
// the hit in time. A database server said so — no free connection, a
// statement or a lock wait out of time, a statement that reached it past
// the hit's deadline — or the hit's time ran out while it waited, for
// whatever it was waiting on; a state file's lock was not free within the
// file store's lock wait. A client cannot tell a store too busy to answer
// from one whose server or lock holder hangs, and sending fast makes the
// first: that is load, not an outage, and WithFailPolicy refuses such a
// hit under FailOpen as under FailClosed, so that no client opens the door
// by sending fast. WithFailPolicy takes a store's error for a process out
// of file descriptors (EMFILE, ENFILE) as ErrBusy too: clients that hold a
// server's connections open make it, whatever the store. It wraps
// ErrUnavailable.
var ErrBusy = fmt.Errorf("%w: too busy to count the hit in time", ErrUnavailable)

// FailPolicy says what [WithFailPolicy] does with a hit its store could
// not record (an error wrapping ErrUnavailable). Load is not such a case:
// a store waits its turn for a busy server or a held lock within its
// timeout, and a hit it could not take in time (ErrBusy) is refused under
// every policy but FailLocal.
//
// Fail-open lets the request through uncounted: right for an abuse brake
// with other backstops, such as the original's "don't create too many
// demos". Fail-closed refuses to decide, and the middleware answers 503:
// right for a security boundary such as login throttling. Fail-local
// decides in an in-memory store of this process alone — the lesson's
// broken store as a bounded fallback: a pool of K long-lived processes
// lets at most K × limit through while the shared store is out, but under
// CGI, where every request is a new process, it is no better than
// fail-open. The zero value is FailOpen, as in the original.
type FailPolicy int

const (
	FailOpen FailPolicy = iota
	FailClosed
	FailLocal
)

// FailPolicies lists every policy, in the order the documentation uses.
func FailPolicies() []FailPolicy { return []FailPolicy{FailOpen, FailClosed, FailLocal} }

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

// ParseFailPolicy parses a policy's String.
func ParseFailPolicy(s string) (FailPolicy, error) {
	for _, p := range FailPolicies() {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("ratelab: unknown fail policy %q: use %s", s, choices.Or(FailPolicies()))
}

// LogEvery is how often WithFailPolicy's log says that hits are decided
// one way: once for the first, then at most once every LogEvery, with how
// many like it were held back since.
const LogEvery = 10 * time.Second

// failSafe is the Store WithFailPolicy returns.
type failSafe struct {
	store  Store
	policy FailPolicy
	local  Store
	log    *logevery.Log
}

// WithFailPolicy returns a Store that takes every hit in s and decides by
// p the hits s cannot record: those whose error wraps ErrUnavailable.
// Other errors — a conflict between two rules, a context that ended — are
// returned as they are, under every policy. local is the in-process store
// FailLocal decides in (the lesson's broken_inmemory, bounded), required
// for FailLocal and ignored otherwise; log receives a line when the policy
// decides a hit, one for each way it decides at most every LogEvery
// (nil: slog.Default()). A store without a policy
// fails closed, without the log line: it returns its error.
func WithFailPolicy(s Store, p FailPolicy, local Store, log *slog.Logger) (Store, error) {
	switch {
	case s == nil:
		return nil, errors.New("ratelab: WithFailPolicy needs a store")
	case p != FailOpen && p != FailClosed && p != FailLocal:
		return nil, fmt.Errorf("ratelab: unknown fail policy %v", p)
	case p == FailLocal && local == nil:
		return nil, errors.New("ratelab: fail policy local needs an in-process store")
	case p != FailLocal:
		local = nil
	}
	if log == nil {
		log = slog.Default()
	}
	return &failSafe{store: s, policy: p, local: local, log: logevery.New(log, LogEvery)}, nil
}

// !+fail

// TakeAt takes the hit in the store and applies the policy when the store
// could not record it. If ctx has ended, the caller gave up: ctx's error is
// returned under every policy, since nobody waits for the answer.
func (f *failSafe) TakeAt(ctx context.Context, r Rule, key string, now time.Time) (Decision, error) {
	d, err := f.store.TakeAt(ctx, r, key, now)
	if err == nil || !errors.Is(err, ErrUnavailable) {
		return d, err
	}
	if ended := gaveUp(ctx); ended != nil {
		return Decision{}, fmt.Errorf("ratelab: %w (%v)", ended, err)
	}
	var decided interface{ Decided() Decision }
	busy := asBusy(err)
	switch {
	case f.policy != FailLocal && busy != nil:
		f.log.At(now, slog.LevelError, "ratelab: hit refused: the store is busy (load is not an outage)", "rule", r.Name, "err", busy)
		return Decision{}, busy
	case f.policy == FailClosed:
		f.log.At(now, slog.LevelError, "ratelab: hit refused (fail-closed)", "rule", r.Name, "err", err)
		return Decision{}, err
	case errors.As(err, &decided):
		f.log.At(now, slog.LevelWarn, "ratelab: hit decided on a count the store could not confirm", "rule", r.Name, "err", err)
		return decided.Decided(), nil
	case f.policy == FailLocal:
		d, lerr := f.local.TakeAt(ctx, r, key, now)
		if lerr != nil {
			return Decision{}, fmt.Errorf("ratelab: fail-local: %w", lerr)
		}
		f.log.At(now, slog.LevelWarn, "ratelab: hit decided by this process alone (fail-local)", "rule", r.Name, "allowed", d.Allowed, "err", err)
		d.Source, d.Cause = Local, err
		return d, nil
	case maybeCounted(err):
		f.log.At(now, slog.LevelWarn, "ratelab: hit let through, counted or not (fail-open): the store's answer was lost", "rule", r.Name, "err", err)
	default:
		f.log.At(now, slog.LevelWarn, "ratelab: hit not counted (fail-open)", "rule", r.Name, "err", err)
	}
	return Decision{Rule: r, Allowed: true, Source: Uncounted, Cause: err}, nil
}

// asBusy is err if it wraps ErrBusy, err wrapped in ErrBusy if it is this
// process out of file descriptors, and nil otherwise.
func asBusy(err error) error {
	switch {
	case errors.Is(err, ErrBusy):
		return err
	case descriptors.Exhausted(err):
		return fmt.Errorf("%w: %w", ErrBusy, err)
	}
	return nil
}

// maybeCounted reports whether err says the hit may have been counted
// all the same — the store's request went out and its answer was lost —
// by a method MaybeCounted that reports true.
func maybeCounted(err error) bool {
	var m interface{ MaybeCounted() bool }
	return errors.As(err, &m) && m.MaybeCounted()
}

// !-fail

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
