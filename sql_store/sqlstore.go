// Package sqlstore is what the MariaDB and PostgreSQL stores share: their
// options and their checks, their keys, the shape of a hit (the fixed
// window's one statement or the locked step, under a timeout), and what is done to their tables besides hits (create, reset,
// clear, the batched sweep). The SQL and the drivers stay in each store.
package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/poll"
)

// DefaultTimeout bounds one hit, waits for a connection and for a row
// lock included, by default. It is long enough that load is not taken for
// an outage: under CGI every hit connects anew, and 200 requests at once on
// two cores make that take a few hundred milliseconds.
const DefaultTimeout = 2 * time.Second

// ServerTimeout is how long the server may spend on a statement of a hit
// whose client waits at most timeout: four fifths of it. The server must
// give up first. A client that gives up first only drops its connection,
// and a statement that was waiting for a row lock then runs when the lock
// is released and commits a hit its client was told was not counted.
func ServerTimeout(timeout time.Duration) time.Duration { return timeout * 4 / 5 }

// DefaultMaxConns is how many connections one process's store opens at
// most by default.
const DefaultMaxConns = 10

// ConnBudget returns how many connections each of processes may open on
// a server that accepts usable client connections in all: a quarter is
// kept for other clients (an operator's shell, a sweep, a deploy), the rest
// is shared out, and no process gets more than DefaultMaxConns. An error
// says that processes cannot each have one.
func ConnBudget(usable, processes int) (int, error) {
	share := usable * 3 / 4
	if processes < 1 || share < processes {
		return 0, fmt.Errorf("%d processes need a connection each, and the server accepts %d (three quarters of them: %d): "+
			"run fewer processes or raise max_connections", processes, usable, share)
	}
	return min(share/processes, DefaultMaxConns), nil
}

// SweepBatch is how many rows one DELETE of a sweep removes at most.
const SweepBatch = 1000

// Options configure a SQL store: each store's Options, which have these
// fields, converted.
type Options struct {
	Timeout time.Duration    // 0 means DefaultTimeout
	Logger  *slog.Logger     // nil means slog.Default()
	Prefix  string           // "" means "ratelab_"
	Clock   func() time.Time // nil means time.Now
}

// Base is the part of a store that is not SQL, and the Driver it runs on.
type Base struct {
	Pkg     string // the store's package name, for errors and logs
	Timeout time.Duration
	Log     *slog.Logger
	Now     func() time.Time
	Prefix  string
	Driver
	tables Tables
}

var prefixRE = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// Driver is what the SQL of a store's server says: how to tell load,
// time running out and refused settings from other errors, the tables'
// statements with their prefix filled in, and how to run one.
type Driver struct {
	// Overloaded reports whether an error is the server refusing a
	// connection because it has no free one: load, not an outage.
	Overloaded func(error) bool
	// OutOfTime reports whether an error is the server ending a
	// statement, or a wait for a row lock, that ran out of its time.
	OutOfTime func(error) bool
	// Refused reports whether an error is the server refusing the
	// connection's settings — credentials, database, privileges, TLS it
	// does not offer: a configuration to fix, which no policy lets a hit
	// through for; its hit's error wraps ErrRefused, the store's.
	Refused    func(error) bool
	ErrRefused error
	Tables     func(prefix string) Tables
	Exec       Exec
}

// NewBase checks o and returns the Base of a store of package pkg, with
// o's defaults filled in, on the server drv describes.
func NewBase(pkg string, o Options, drv Driver) (*Base, error) {
	if o.Timeout < 0 {
		return nil, fmt.Errorf("%s: timeout %v must not be negative", pkg, o.Timeout)
	}
	prefix := cmp.Or(o.Prefix, "ratelab_")
	if !prefixRE.MatchString(prefix) {
		return nil, fmt.Errorf("%s: table prefix %q: use 1 to 32 lower-case letters, digits and underscores", pkg, prefix)
	}
	b := &Base{Pkg: pkg, Timeout: cmp.Or(o.Timeout, DefaultTimeout), Log: cmp.Or(o.Logger, slog.Default()),
		Now: o.Clock, Prefix: prefix, Driver: drv, tables: drv.Tables(prefix)}
	b.tables.exec = drv.Exec
	if b.Now == nil {
		b.Now = time.Now
	}
	return b, nil
}

// Key returns the primary key of the state of key under r, a checked
// rule: the algorithm and the digest of the
// rule's state key, as in "fixed:<hex sha256("demo-start:ip:203.0.113.7")>".
func Key(r ratelab.Rule, key string) string {
	return string(r.Algorithm) + ":" + ratelab.KeyDigest(r.StateKey(key))
}

// Hit is one hit as a step takes it.
type Hit struct {
	Key  string       // the row's primary key (see Key)
	Rule ratelab.Rule // normalized
	Now  time.Time
	// Deadline is the instant, in Unix microseconds, after which the
	// server must not count the hit: a statement compares it with the
	// server's clock once it holds the row, and changes nothing if it is
	// past. It comes ServerTimeout into the hit, before the client gives
	// up, so that a statement that waited in a queue or behind a stopped
	// server does not count a hit its client reported as failed.
	Deadline int64
}

// Fixed returns the bounds a fixed-window statement compares the row
// with: package algorithm's, for this hit.
func (h Hit) Fixed() algorithm.FixedBounds { return algorithm.BoundsOf(h.Rule, h.Now) }

// FixedDecision decides the hit from the count and reset_at the statement
// left: a window that ends beyond Live is another rule's (the statement
// left it as it was).
func (h Hit) FixedDecision(count, resetAt int64) (ratelab.Decision, error) {
	if b := h.Fixed(); resetAt > b.Live {
		return ratelab.Decision{}, algorithm.FixedConflict(h.Rule, resetAt-b.T)
	}
	return algorithm.FixedDecision(h.Rule, count, resetAt, h.Now), nil
}

// Step takes one hit.
type Step func(ctx context.Context, h Hit) (ratelab.Decision, error)

// ErrUnanswered is the cause of a hit whose server did not answer in
// time: too busy to, or hung, or out of reach — a client cannot tell
// which, and sending fast makes the first.
var ErrUnanswered = errors.New("the server did not answer in time")

// unanswered returns err, the failure of a hit, as ErrUnanswered when the
// hit's own time ran out (its deadline passed, the caller's has not):
// whatever the hit was waiting for — the dial, the server's greeting, a
// connection of its process, the statement's reply — a flood can make it
// wait that long. A listen queue a flood fills drops new connections
// (a dial that times out); a server a flood swamps greets them late. Only
// a server that says it is not there — a refused or reset connection, an
// unreachable host, a name that does not resolve — is an outage.
func unanswered(hit, caller context.Context, err error) error {
	if (ended(hit) || Timeout(err)) && !ended(caller) {
		return fmt.Errorf("%w: %w", ErrUnanswered, err)
	}
	return err
}

// Timeout reports whether err is a wait that ran out of time — a dial, a
// read, a context's deadline — whose own deadline can come before the
// hit's: a driver's connection timeout, or database/sql's opener's
// attempt for another hit, handed to this one.
func Timeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Load reports whether err, the failure of a check of the server outside
// a hit (serve's at start, a CGI process's before its hit), says load,
// not an outage: the server turned the connection away (ratelab.ErrBusy,
// as the stores' CheckServer wraps it) or did not answer in time. Hits
// then wait their turn, or are refused as busy: they do not fail open.
func Load(err error) bool { return errors.Is(err, ratelab.ErrBusy) || Timeout(err) }

// ended reports whether ctx is done or its deadline has passed: a network
// deadline taken from ctx can fire before ctx's own timer has run.
func ended(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ctx.Err() != nil || ok && !time.Now().Before(d)
}

// ErrLate is the cause of a hit the server reached after its deadline:
// the statement ran, and changed nothing.
var ErrLate = errors.New("the server reached the hit after its deadline and did not count it")

// TakeAt runs fixed (the fixed window) or locked (every other algorithm)
// within the timeout. A server that refuses a connection for want of free
// ones is busy, not gone (b.Overloaded says which errors say so): the hit
// waits its turn and tries again, within the timeout. A hit the server
// still did not take in time is an error wrapping ratelab.ErrBusy: load,
// not an outage (see unanswered), which ratelab.WithFailPolicy refuses
// under every policy but fail-local. What the database could not answer
// otherwise wraps ratelab.ErrUnavailable; settings the server refused
// (Refused) wrap ErrRefused, under every policy; a conflict with another
// rule of the same name wraps ratelab.ErrRuleConflict.
func (b *Base) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time, fixed, locked Step) (ratelab.Decision, error) {
	h := Hit{Key: Key(r, key), Rule: r, Now: now}
	tctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	end, _ := tctx.Deadline()
	h.Deadline = end.Add(-(b.Timeout - ServerTimeout(b.Timeout))).UnixMicro()
	step := locked
	if r.Algorithm == ratelab.FixedWindow {
		step = fixed
	}
	d, err := step(tctx, h)
	for try := 0; err != nil && b.Overloaded != nil && b.Overloaded(err); try++ {
		b.Log.Debug(b.Pkg+": the server has no free connection: the hit waits its turn", "key", h.Key, "err", err)
		if !poll.Backoff(tctx, try) {
			break
		}
		d, err = step(tctx, h)
	}
	if err != nil && !b.busy(err) {
		err = unanswered(tctx, ctx, err)
	}
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, ratelab.ErrRuleConflict), errors.Is(err, ratelab.ErrUncheckedRule):
		return ratelab.Decision{}, fmt.Errorf("%s: %s: %w", b.Pkg, h.Key, err)
	case b.Refused != nil && b.Refused(err):
		return ratelab.Decision{}, fmt.Errorf("%w: %s: %w", b.ErrRefused, h.Key, err)
	case b.busy(err):
		return ratelab.Decision{}, fmt.Errorf("%s: %s: %w: %w", b.Pkg, h.Key, ratelab.ErrBusy, err)
	}
	return ratelab.Decision{}, fmt.Errorf("%s: %s: %w: %w", b.Pkg, h.Key, ratelab.ErrUnavailable, err)
}

// busy reports whether err says the server could not take the hit in
// time: no free connection, a statement or a lock wait out of time, a
// statement past the deadline, a hit that waited for one of its process's
// connections, or ran out of time waiting for anything else.
func (b *Base) busy(err error) bool {
	return errors.Is(err, ErrLate) || errors.Is(err, ErrUnanswered) ||
		b.Overloaded != nil && b.Overloaded(err) || b.OutOfTime != nil && b.OutOfTime(err)
}

// Expiry is when a state can be swept: once the key is back to its full
// allowance, plus MaxSkew for a hit stamped late.
func Expiry(d ratelab.Decision, now time.Time) int64 {
	return now.Add(d.ResetAfter+ratelab.MaxSkew).Unix() + 1
}
