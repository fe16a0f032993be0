// Package redisstore keeps rate-limit windows in Redis, for applications
// that have outgrown one machine: flock(2) serialises the processes of one
// kernel, and two hosts behind a load balancer each keep their own files.
//
// Every hit is one server-side script, so the read, the update and the
// expiry happen together: no other client runs in between, and a crash
// of the client cannot leave a counter without an expiry (the mistake
// package beyondonehost demonstrates). Each algorithm's script is the
// step of package algorithm that the memory and file stores run, written
// in Lua, and a shared table of instants holds them to the same
// decisions. The
// caller's clock decides (so tests and demos inject time as everywhere
// else in ratelab), and the key's TTL only cleans up.
//
// Keys are stored hashed, under a prefix, so whatever a key holds never
// reaches Redis as a key name. A hit costs one network round trip; when
// Redis cannot be reached within Options.Timeout, the hit is an error
// wrapping ratelab.ErrUnavailable, which ratelab.WithFailPolicy decides,
// as it does the file store's.
package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	"github.com/ratelab/ratelab/internal/poll"
)

// defaultPrefix is the prefix of the store's keys when Options.Prefix is "".
const defaultPrefix = "ratelab:"

// DefaultTimeout bounds one hit's round trip, connecting included, by
// default. It is long enough that load is not taken for an outage: under
// CGI every hit connects anew, and 200 requests at once on two cores
// keep a process off the CPU for hundreds of milliseconds.
const DefaultTimeout = 2 * time.Second

// Options configure a Store. The zero value has a 2 s timeout.
type Options struct {
	// Timeout bounds each hit, connection included; 0 means DefaultTimeout.
	// It is the deadline of the hit's context, which go-redis applies to
	// every read, write and dial with a client that has
	// ContextTimeoutEnabled (NewClient's); another client's own timeouts
	// bound its I/O instead.
	Timeout time.Duration
	Logger  *slog.Logger // nil means slog.Default()
	// Prefix is put before every key; "" means "ratelab:".
	Prefix string
	// Clock is the time source of Take; nil means time.Now.
	Clock func() time.Time
	// WaitReplicas, if positive, makes every hit wait (Redis's WAIT, on
	// the connection of the node that ran the script) until that many
	// replicas have the write, at most WaitTimeout, so that a failover can
	// lose no count the client was told about. Replication is otherwise
	// asynchronous: a count the primary acknowledged and a replica never
	// received is lost when the replica takes over. A hit they do not
	// confirm in time was counted on the primary all the same: its error
	// wraps ErrNotReplicated and ratelab.ErrUnavailable and carries the
	// primary's decision. ratelab.WithFailPolicy refuses it under
	// fail-closed, and its count stays unless a failover loses it;
	// fail-open and fail-local return the primary's decision, logged as
	// unconfirmed. Only fail-closed makes WaitReplicas a guarantee.
	WaitReplicas int
	// WaitTimeout bounds WAIT; 0 means 100 ms. It must be shorter than
	// Timeout. The first WAIT after a replica (re)connects can take up to
	// a second, until the replica's first acknowledgement.
	WaitTimeout time.Duration
}

// ErrNotReplicated is wrapped by the error of a hit whose write was not
// confirmed by enough replicas, which says which of two things happened.
// "counted on the primary, not confirmed on N of M replicas": the script
// ran and counted the hit, and WAIT (Options.WaitReplicas) saw too few
// replicas with the write within WaitTimeout; the count stays on the
// primary, and reaches the replicas late or is lost in a failover. "the
// primary refused the write, not counted": a primary configured with
// min-replicas-to-write refused the script (NOREPLICAS) for want of good
// replicas, and the hit is an outage (ratelab.ErrUnavailable).
var ErrNotReplicated = errors.New("redisstore: the write was not confirmed by enough replicas")

// Store is a Redis-backed rate-limit store for every algorithm, safe for
// concurrent use by any number of goroutines, processes and hosts sharing
// one Redis.
type Store struct {
	rdb     redis.Cmdable
	proc    processor
	reload  reloader // nil but for a cluster client
	timeout time.Duration
	log     *slog.Logger
	prefix  string
	clock   func() time.Time // Options.Clock; nil: time.Now

	waitReplicas int
	waitTimeout  time.Duration
}

// New returns a Store using client, a go-redis client of any kind (plain,
// failover, cluster); build it with NewClient, or
// with ContextTimeoutEnabled set, so that Options.Timeout bounds every hit.
// New does not contact Redis: a Redis that is down when the application
// starts is a failure of the first hits (ratelab.ErrUnavailable), not a
// reason not to start.
func New(client redis.Cmdable, opts Options) (*Store, error) {
	proc, ok := client.(processor)
	if !ok { // nil too
		return nil, fmt.Errorf("redisstore: New needs a client, a go-redis one, not %T", client)
	}
	if err := opts.Check(); err != nil {
		return nil, err
	}
	s := &Store{rdb: client, proc: proc, timeout: cmp.Or(opts.Timeout, DefaultTimeout), log: opts.Logger,
		prefix: cmp.Or(opts.Prefix, defaultPrefix), clock: opts.Clock,
		waitReplicas: opts.WaitReplicas, waitTimeout: cmp.Or(opts.WaitTimeout, 100*time.Millisecond)}
	s.reload, _ = client.(reloader)
	if s.log == nil {
		s.log = slog.Default()
	}
	return s, nil
}

// Check reports what New refuses in o: a negative duration or count, a
// WaitTimeout not shorter than Timeout.
func (o Options) Check() error {
	if o.Timeout < 0 {
		return fmt.Errorf("redisstore: timeout %v must not be negative", o.Timeout)
	}
	if o.WaitReplicas < 0 || o.WaitTimeout < 0 {
		return fmt.Errorf("redisstore: WaitReplicas %d and WaitTimeout %v must not be negative", o.WaitReplicas, o.WaitTimeout)
	}
	if o.WaitReplicas > 0 && cmp.Or(o.WaitTimeout, 100*time.Millisecond) >= cmp.Or(o.Timeout, DefaultTimeout) {
		return fmt.Errorf("redisstore: WaitTimeout %v must be shorter than Timeout %v, which bounds the script and the WAIT together",
			cmp.Or(o.WaitTimeout, 100*time.Millisecond), cmp.Or(o.Timeout, DefaultTimeout))
	}
	return nil
}

var scripts = map[ratelab.Algorithm]*script{
	ratelab.FixedWindow:    fixedWindow,
	ratelab.SlidingCounter: slidingCounter,
	ratelab.SlidingLog:     slidingLog,
	ratelab.GCRA:           gcra,
}

// Take takes one hit now; it is TakeAt(ctx, r, key, clock()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	wall := time.Now()
	if s.clock != nil {
		return s.takeAt(ctx, r, key, s.clock(), wall)
	}
	return s.takeAt(ctx, r, key, wall, wall) // one reading of the clock for the instant and the deadline
}

// TakeAt takes one hit of key under r at now, in one script, and decides
// it; r and now are trusted, as the ratelab.Store contract says. The round
// trip ends at Options.Timeout or when ctx ends, whichever is first. When
// Redis cannot answer in time the error wraps ratelab.ErrUnavailable,
// which ratelab.WithFailPolicy decides by a policy; a Redis out of memory
// refuses the write, and that wraps ratelab.ErrBusy: load, refused under
// fail-open too. A state of another rule with the same name
// (ratelab.ErrRuleConflict, the state left as it was), settings Redis
// refused (ErrRefused) and a server that is not Redis (ErrNotRedis) are
// errors under every policy.
func (s *Store) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return s.takeAt(ctx, r, key, now, time.Now())
}

// takeAt is TakeAt, the hit's deadline being Options.Timeout after wall,
// the time of the computer's clock.
func (s *Store) takeAt(ctx context.Context, r ratelab.Rule, key string, now, wall time.Time) (ratelab.Decision, error) {
	name := s.key(r, key)
	rkey := countKey(r, name)
	d, err := s.take(withDeadline(ctx, wall.Add(s.timeout)), name, r, now)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, ratelab.ErrRuleConflict), errors.Is(err, ratelab.ErrUncheckedRule):
		return ratelab.Decision{}, fmt.Errorf("redisstore: %s: %w", rkey, err)
	case refused(err):
		// A wrong password or database is a configuration to fix, not an
		// outage: under no policy is the hit let through for it.
		s.log.Error("redisstore: redis refused the connection's settings", "key", rkey, "err", err)
		return ratelab.Decision{}, fmt.Errorf("%w: %w", ErrRefused, err) // ErrRefused names the package
	case notRedis(err): // the URL names another service: as much a configuration error
		s.log.Error("redisstore: the server does not answer in Redis's protocol", "key", rkey, "err", err)
		return ratelab.Decision{}, fmt.Errorf("%w: %w", ErrNotRedis, err)
	case isUnconfirmed(err):
		return ratelab.Decision{}, unconfirmedHit(rkey, d, err)
	case reply(err, "OOM"):
		// Full, under noeviction: every new key is refused, and each
		// client's first hit makes one, so clients that send from many
		// addresses fill it. That is load, not an outage: refused under
		// fail-open too (the attacker's finding at 5879fdb: every new
		// client was let through once Redis had filled).
		return ratelab.Decision{}, fmt.Errorf("redisstore: %s: %w: %w", rkey, ratelab.ErrBusy, err)
	}
	return ratelab.Decision{}, fmt.Errorf("redisstore: %s: %w: %w", rkey, ratelab.ErrUnavailable, lost(err))
}

// take runs the script of r's algorithm on the state named name (see
// key) and decides the hit from
// its reply. A state the script replaced, as no rule could have written
// it, is logged as a warning naming the key and the cause; the hit is
// decided on the fresh state. A hit the replicas did not confirm
// (WaitReplicas) is decided and returned with its error.
func (s *Store) take(ctx context.Context, name string, r ratelab.Rule, now time.Time) (ratelab.Decision, error) {
	sc := scripts[r.Algorithm]
	switch {
	case r.Algorithm == ratelab.FixedWindow:
		return s.takeFixed(ctx, name, r, now)
	case sc == nil:
		return ratelab.Decision{}, fmt.Errorf("redisstore: unknown algorithm %q: %w", r.Algorithm, ratelab.ErrUncheckedRule)
	}
	vals, err := s.run(ctx, sc, []string{name}, stepArgs(r, now)...)
	switch {
	case err != nil && !isUnconfirmed(err):
		return ratelab.Decision{}, err
	case len(vals) == 2 && vals[0] == 1:
		return ratelab.Decision{}, algorithm.WindowConflict(r, vals[1])
	case len(vals) == 6 && vals[0] == 0:
		s.replaced(name, vals[5])
	case len(vals) != 5 || vals[0] != 0:
		return ratelab.Decision{}, fmt.Errorf("redisstore: script returned %v", vals)
	}
	return ratelab.Decision{
		Rule:       r,
		Allowed:    vals[1] == 1,
		Remaining:  vals[2],
		RetryAfter: algorithm.Millis(vals[3]),
		ResetAfter: algorithm.Millis(vals[4]),
	}, err
}

// replaced logs that the script replaced the state at rkey, for cause.
func (s *Store) replaced(rkey string, cause int64) {
	why, ok := causes[cause]
	if !ok {
		why = fmt.Sprintf("cause %d", cause)
	}
	s.log.Warn("redisstore: replaced a corrupt state", "key", rkey, "cause", why)
}

// run runs sc on keys (of one slot) and, with WaitReplicas, WAIT
// after it on the same connection (a pipeline): WAIT counts the replicas
// that have the writes of its own connection. A cluster's TRYAGAIN, or a
// MOVED or ASK that go-redis stopped following (its MaxRedirects, while
// the nodes' views of a moved slot converge) — the script did not run —
// is tried again until ctx ends. A primary's refusal
// for want of good replicas (min-replicas-to-write) is ErrNotReplicated
// too.
func (s *Store) run(ctx context.Context, sc *script, keys []string, args ...any) ([]int64, error) {
	vals, err := s.runScript(ctx, sc, keys, args...)
	for try := 0; notRun(err); try++ {
		// A slot moving between a cluster's nodes holds a part of the
		// state's keys on each, or none on the node importing it: the
		// script did not run, and can once the slot has moved.
		if !poll.Backoff(ctx, try) {
			break
		}
		if s.reload != nil && !redis.HasErrorPrefix(err, "TRYAGAIN") {
			s.reload.ReloadState(ctx) // the map of the slots is stale
		}
		vals, err = s.runScript(ctx, sc, keys, args...)
	}
	s.reloadAfter(ctx, err)
	if err != nil && redis.HasErrorPrefix(err, "NOREPLICAS") { // min-replicas-to-write: the primary refused the write
		return nil, fmt.Errorf("%w: the primary refused the write, not counted: %w", ErrNotReplicated, err)
	}
	return vals, err
}

// notRun reports whether err says a cluster node did not run the script:
// TRYAGAIN, or a redirect left unfollowed.
func notRun(err error) bool {
	return err != nil && (redis.HasErrorPrefix(err, "TRYAGAIN") || redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"))
}

func (s *Store) runScript(ctx context.Context, sc *script, keys []string, args ...any) ([]int64, error) {
	if s.waitReplicas == 0 {
		return s.call(ctx, sc, keys, args...)
	}
	return s.runWait(ctx, sc, keys, args...)
}

// Reset forgets the state of key under r: one DEL (of both keys of a
// fixed window), atomic against any script that runs before or after it.
func (s *Store) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	if err := r.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	r = r.Normalized()
	name := s.key(r, key)
	keys := []string{name}
	if k := countKey(r, name); k != name {
		keys = append(keys, k)
	}
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("redisstore: reset: %w", err)
	}
	return nil
}
