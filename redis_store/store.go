// Package redisstore keeps rate-limit windows in Redis, for applications
// that have outgrown one machine: flock(2) serialises the processes of one
// kernel, and two hosts behind a load balancer each keep their own files.
//
// Every hit is one server-side script, so the read, the update and the
// expiry happen together: no other client runs in between, and a crash
// of the client cannot leave a counter without an expiry (the mistake
// [IncrThenExpire] demonstrates). The window logic is fixed_filestore's:
// the caller's clock decides when a window ends (so tests and demos inject
// time as everywhere else in ratelab), and the key's TTL only cleans up.
//
// Keys are stored hashed, under a prefix, so whatever a key holds never
// reaches Redis as a key name. A hit costs one network round trip; when
// Redis cannot be reached within Options.Timeout, the store follows its
// fail policy, as the file store does.
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
)

// DefaultTimeout bounds one hit's round trip by default.
const DefaultTimeout = 500 * time.Millisecond

// Options configure a Store. The zero value fails open with a 500 ms
// timeout and the fixed window, like the file store.
type Options struct {
	FailPolicy ratelab.FailPolicy
	// Timeout bounds each hit, connection included; 0 means DefaultTimeout.
	Timeout   time.Duration
	Logger    *slog.Logger // nil means slog.Default()
	Algorithm ratelab.Algorithm
	// Prefix is put before every key; "" means "ratelab:".
	Prefix string
	// Clock is the time source of Hit; nil means time.Now.
	Clock func() time.Time
}

// Store is a Redis-backed rate-limit store, safe for concurrent use by any
// number of goroutines, processes and hosts sharing one Redis.
type Store struct {
	rdb     redis.Cmdable
	policy  ratelab.FailPolicy
	timeout time.Duration
	log     *slog.Logger
	algo    ratelab.Algorithm
	prefix  string
	now     func() time.Time
}

// NewClient returns a client for a redis:// URL with timeouts suited to a
// rate limiter: Options.Timeout applies to every command
// (ContextTimeoutEnabled), dials give up after the same time, and failed
// commands are not retried — a limiter must answer quickly, not eventually.
func NewClient(url string, timeout time.Duration) (*redis.Client, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	timeout = cmp.Or(max(timeout, 0), DefaultTimeout)
	opts.ContextTimeoutEnabled = true
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = timeout, timeout, timeout
	opts.MaxRetries = -1
	return redis.NewClient(opts), nil
}

// New returns a Store using client; build the client with NewClient, or
// with ContextTimeoutEnabled set, so that Options.Timeout bounds every hit.
// New does not contact Redis: a Redis that is down when the application
// starts is a failure of the first hits, handled by the fail policy, not a
// reason not to start.
func New(client redis.Cmdable, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("redisstore: New needs a client")
	}
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("redisstore: timeout %v must not be negative", opts.Timeout)
	}
	if opts.FailPolicy != ratelab.FailOpen && opts.FailPolicy != ratelab.FailClosed {
		return nil, fmt.Errorf("redisstore: unknown fail policy %v", opts.FailPolicy)
	}
	if opts.Algorithm == "" {
		opts.Algorithm = ratelab.FixedWindow
	}
	if _, err := ratelab.ParseAlgorithm(string(opts.Algorithm)); err != nil {
		return nil, fmt.Errorf("redisstore: %w", err)
	}
	s := &Store{rdb: client, policy: opts.FailPolicy, timeout: cmp.Or(opts.Timeout, DefaultTimeout), log: opts.Logger,
		algo: opts.Algorithm, prefix: cmp.Or(opts.Prefix, "ratelab:"), now: opts.Clock}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

// Key returns the Redis key holding key's window.
func (s *Store) Key(key string) string {
	kind := "fixed:"
	if s.algo == ratelab.SlidingCounter {
		kind = "sliding:"
	}
	return s.prefix + kind + ratelab.KeyDigest(key)
}

// !+fixedscript

// fixedWindow is the fixed window in one script: read the window, start a
// new one or count the hit in it, and set the expiry in the same step.
// It mirrors ratelab.State.Next, clamping a reset_at more than one window
// ahead. The TTL outlives reset_at by a second and only cleans up; the
// caller's clock, passed in ARGV, decides when the window ends.
var fixedWindow = redis.NewScript(`
local now, w = tonumber(ARGV[1]), tonumber(ARGV[2])
local st = redis.call('HMGET', KEYS[1], 'count', 'reset_at')
local count, reset = tonumber(st[1]), tonumber(st[2])
if count == nil or reset == nil or reset <= now then
  count, reset = 1, now + w
  redis.call('HSET', KEYS[1], 'count', count, 'reset_at', reset)
else
  if reset > now + w then
    reset = now + w
    redis.call('HSET', KEYS[1], 'reset_at', reset)
  end
  count = redis.call('HINCRBY', KEYS[1], 'count', 1)
end
redis.call('EXPIRE', KEYS[1], reset - now + 1)
return {count, reset}
`)

// !-fixedscript

// slidingCounter is ratelab.SlidingState.Next in one script.
var slidingCounter = redis.NewScript(`
local now, w = tonumber(ARGV[1]), tonumber(ARGV[2])
local cur = now - (now % w)
local st = redis.call('HMGET', KEYS[1], 'window_start', 'count', 'prev_count')
local ws, c, p = tonumber(st[1]), tonumber(st[2]) or 0, tonumber(st[3]) or 0
if ws == cur then
elseif ws == cur - w then
  p, c = c, 0
else
  p, c = 0, 0
end
c = c + 1
redis.call('HSET', KEYS[1], 'window_start', cur, 'count', c, 'prev_count', p)
redis.call('EXPIRE', KEYS[1], 2 * w + 1)
return {cur, c, p}
`)

// Hit records one hit for key now; it is HitAt(key, window, clock()).
func (s *Store) Hit(key string, window time.Duration) (ratelab.Hit, error) {
	return s.HitAt(key, window, s.now())
}

// HitAt records one hit for key at now and returns the window after it.
// When Redis cannot be reached within the timeout, a fail-open store logs
// and returns a fresh window's first hit with NotCounted set; a fail-closed
// store logs and returns an error wrapping ratelab.ErrUnavailable.
func (s *Store) HitAt(key string, window time.Duration, now time.Time) (ratelab.Hit, error) {
	if err := ratelab.CheckWindow(window); err != nil {
		return ratelab.Hit{}, err
	}
	rkey := s.Key(key)
	h, err := s.hit(rkey, window, now)
	if err == nil {
		return h, nil
	}
	return s.policy.Fail(s.log, "redisstore", slog.String("key", rkey), now, window, err)
}

func (s *Store) hit(rkey string, window time.Duration, now time.Time) (ratelab.Hit, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	w := int64(window / time.Second)
	if s.algo == ratelab.SlidingCounter {
		vals, err := slidingCounter.Run(ctx, s.rdb, []string{rkey}, now.Unix(), w).Int64Slice()
		if err != nil {
			return ratelab.Hit{}, err
		}
		if len(vals) != 3 {
			return ratelab.Hit{}, fmt.Errorf("redisstore: script returned %d values", len(vals))
		}
		st := ratelab.SlidingState{WindowStart: vals[0], Count: vals[1], PrevCount: vals[2]}
		return st.Hit(now, window), nil
	}
	vals, err := fixedWindow.Run(ctx, s.rdb, []string{rkey}, now.Unix(), w).Int64Slice()
	if err != nil {
		return ratelab.Hit{}, err
	}
	if len(vals) != 2 {
		return ratelab.Hit{}, fmt.Errorf("redisstore: script returned %d values", len(vals))
	}
	return ratelab.State{Count: vals[0], ResetAt: vals[1]}.Hit(), nil
}
