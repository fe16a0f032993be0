// Package sqlstore is what the MariaDB and PostgreSQL stores share: their
// options' checks, their keys, the shape of a hit (the fixed window's one
// statement or the locked step, under a timeout and the fail policy) and
// the batched sweep. The SQL and the drivers stay in each store.
package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
)

// DefaultTimeout bounds one hit, lock wait included, by default.
const DefaultTimeout = 500 * time.Millisecond

// ServerTimeout is how long the server may spend on a statement of a hit
// whose client waits at most timeout: four fifths of it. The server must
// give up first. A client that gives up first only drops its connection,
// and a statement that was waiting for a row lock then runs when the lock
// is released and commits a hit its client was told was not counted.
func ServerTimeout(timeout time.Duration) time.Duration { return timeout * 4 / 5 }

// SweepBatch is how many rows one DELETE of a sweep removes at most.
const SweepBatch = 1000

// Base is the part of a store that is not SQL.
type Base struct {
	Pkg     string // the store's package name, for errors and logs
	Policy  ratelab.FailPolicy
	Timeout time.Duration
	Log     *slog.Logger
	Now     func() time.Time
	Prefix  string
	rules   algorithm.Rules
	fail    *ratelab.Failer
}

var prefixRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// Check fills in b's defaults and reports the first thing wrong with it.
func (b *Base) Check() error {
	if b.Timeout < 0 {
		return fmt.Errorf("%s: timeout %v must not be negative", b.Pkg, b.Timeout)
	}
	b.Prefix = cmp.Or(b.Prefix, "ratelab_")
	if !prefixRE.MatchString(b.Prefix) {
		return fmt.Errorf("%s: table prefix %q: use 1 to 32 lower-case letters, digits and underscores", b.Pkg, b.Prefix)
	}
	b.Timeout = cmp.Or(b.Timeout, DefaultTimeout)
	b.Log = cmp.Or(b.Log, slog.Default())
	var err error
	if b.fail, err = brokeninmemory.NewFailer(b.Policy, b.Pkg, b.Log); err != nil {
		return err
	}
	if b.Now == nil {
		b.Now = time.Now
	}
	return nil
}

// Key returns the primary key of the state of key under r: the algorithm
// and the digest of the rule's state key, as in
// "fixed:<hex sha256("demo-start:ip:203.0.113.7")>".
func Key(r ratelab.Rule, key string) string {
	return string(r.Normalized().Algorithm) + ":" + ratelab.KeyDigest(r.StateKey(key))
}

// Step takes one hit of r at now on the row k.
type Step func(ctx context.Context, k string, r ratelab.Rule, now time.Time) (ratelab.Decision, error)

// TakeAt checks the hit, runs fixed (the fixed window) or locked (every
// other algorithm) within the timeout, and applies the fail policy to what
// the database could not answer. A conflict with another rule of the same
// name is an error under either policy.
func (b *Base) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time, fixed, locked Step) (ratelab.Decision, error) {
	if err := b.rules.Admit(r, now); err != nil {
		return ratelab.Decision{}, err
	}
	r = r.Normalized()
	k := Key(r, key)
	tctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	step := locked
	if r.Algorithm == ratelab.FixedWindow {
		step = fixed
	}
	d, err := step(tctx, k, r, now)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, ratelab.ErrRuleConflict):
		return ratelab.Decision{}, fmt.Errorf("%s: %s: %w", b.Pkg, k, err)
	}
	return b.fail.Fail(ctx, slog.String("key", k), r, key, now, err)
}

// Expiry is when a state can be swept: once the key is back to its full
// allowance, plus MaxSkew for a hit stamped late.
func Expiry(d ratelab.Decision, now time.Time) int64 {
	return now.Add(d.ResetAfter+ratelab.MaxSkew).Unix() + 1
}

// Sweep runs each of stmts — a DELETE of at most SweepBatch rows over
// before a cutoff, taking the cutoff and the batch — until it deletes
// fewer than a batch, and returns how many rows it deleted: the states
// that can no longer weigh on a hit at now, MaxSkew later.
func (b *Base) Sweep(ctx context.Context, now time.Time, stmts []string, exec func(ctx context.Context, q string, cutoff int64, batch int) (int64, error)) (int64, error) {
	var total int64
	cutoff := now.Add(-ratelab.MaxSkew).Unix()
	for _, q := range stmts {
		for {
			n, err := exec(ctx, q, cutoff, SweepBatch)
			if err != nil {
				return total, fmt.Errorf("%s: sweep: %w", b.Pkg, err)
			}
			total += n
			if n < SweepBatch {
				break
			}
		}
	}
	return total, nil
}
