package beyondonehost

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/poll"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// Lesson is one demonstrated mistake or its fix: what was claimed and
// what Redis showed.
type Lesson = claim.Claim

// !+incrthenexpire

// IncrThenExpire is the counter most hand-written Redis limiters start
// with: INCR, then, if this was the first hit, EXPIRE — two commands. If
// the client dies between them (crashAfterIncr simulates that), the key has
// a count and no expiry: it never resets, and once it passes the limit the
// client is throttled forever. It exists only to be shown failing;
// redisstore.Store runs both in one script.
func IncrThenExpire(ctx context.Context, rdb redis.Cmdable, key string, window time.Duration, crashAfterIncr bool) (int64, error) {
	n, err := rdb.Incr(ctx, key).Result()
	if err != nil || crashAfterIncr {
		return n, err
	}
	if n == 1 {
		err = rdb.Expire(ctx, key, window).Err()
	}
	return n, err
}

// !-incrthenexpire

// Lock is a TTL lock in Redis: SET key token NX PX ttl. The second
// reference article's sample releases it with a plain DEL, which deletes
// whatever lock is there — after the TTL ran out, someone else's.
type Lock struct {
	rdb   redis.Cmdable
	key   string
	token string
}

// Acquire tries once to take the lock for ttl; ok is false if it is held.
func Acquire(ctx context.Context, rdb redis.Cmdable, key string, ttl time.Duration) (l *Lock, ok bool, err error) {
	var b [16]byte
	rand.Read(b[:])
	l = &Lock{rdb: rdb, key: key, token: hex.EncodeToString(b[:])}
	ok, err = rdb.SetNX(ctx, key, l.token, ttl).Result()
	if err != nil || !ok {
		return nil, ok, err
	}
	return l, true, nil
}

// !+release

// UnsafeRelease deletes the lock key without asking whose it is.
func (l *Lock) UnsafeRelease(ctx context.Context) error {
	return l.rdb.Del(ctx, l.key).Err()
}

var releaseIfMine = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// Release deletes the lock only if it still holds this Lock's token, in
// one script so that nothing can change the key between the check and the
// delete. It reports whether it released anything.
func (l *Lock) Release(ctx context.Context) (bool, error) {
	n, err := releaseIfMine.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	return n == 1, err
}

// !-release

// !+pitfalls

// Pitfalls demonstrates, against a real Redis, the two classic mistakes
// and their fixes, one row each. Expiry is made to happen (PEXPIRE 1, then
// waiting until the key is gone) instead of slept towards.
func Pitfalls(ctx context.Context, rdb redis.Cmdable) ([]Lesson, error) {
	var out []Lesson
	for _, step := range []func(context.Context, redis.Cmdable) (Lesson, error){
		incrThenCrash, scriptExpires, lockReleased(false), lockReleased(true),
	} {
		row, err := step(ctx, rdb)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, nil
}

// !-pitfalls

// incrThenCrash: INCR, the client dies, no EXPIRE.
func incrThenCrash(ctx context.Context, rdb redis.Cmdable) (Lesson, error) {
	const key = "demo:incr-then-expire"
	if _, err := IncrThenExpire(ctx, rdb, key, time.Hour, true); err != nil {
		return Lesson{}, err
	}
	got, err := ttl(ctx, rdb, key)
	return Lesson{Case: "INCR, crash, then no EXPIRE", Expected: "no expiry: never resets", Observed: got}, err
}

// scriptExpires: the store's script sets the expiry with the count.
func scriptExpires(ctx context.Context, rdb redis.Cmdable) (Lesson, error) {
	s, err := redisstore.New(rdb, redisstore.Options{})
	if err != nil {
		return Lesson{}, err
	}
	rule := ratelab.Rule{Name: "demo", Limit: 30, Window: time.Hour}.Normalized()
	if _, err := s.Take(ctx, rule, "pitfall"); err != nil {
		return Lesson{}, err
	}
	got, err := ttl(ctx, rdb, s.Key(rule, "pitfall"))
	return Lesson{Case: "count and expiry in one script", Expected: "expires", Observed: got}, err
}

// lockReleased: A's TTL lock runs out, B takes it, A releases it — by
// checking the token if safe, by a plain DEL if not — and C tries to take
// it.
func lockReleased(safe bool) func(context.Context, redis.Cmdable) (Lesson, error) {
	return func(ctx context.Context, rdb redis.Cmdable) (Lesson, error) {
		key := fmt.Sprintf("demo:lock:%v", safe)
		a, _, err := Acquire(ctx, rdb, key, time.Minute)
		if err != nil || a == nil {
			return Lesson{}, fmt.Errorf("beyondonehost: A could not take a free lock: %v", err)
		}
		if err := expireNow(ctx, rdb, key); err != nil { // A's work outlived its TTL
			return Lesson{}, err
		}
		if _, ok, err := Acquire(ctx, rdb, key, time.Minute); err != nil || !ok {
			return Lesson{}, fmt.Errorf("beyondonehost: B could not take the expired lock: %v", err)
		}
		if safe {
			_, err = a.Release(ctx) // checks the token: not A's any more
		} else {
			err = a.UnsafeRelease(ctx) // deletes B's lock
		}
		if err != nil {
			return Lesson{}, err
		}
		_, cGot, err := Acquire(ctx, rdb, key, time.Minute)
		holders := "1 holder (B)"
		if cGot {
			holders = "2 holders (B and C)"
		}
		if safe {
			return Lesson{Case: "release checks the token", Expected: "1 holder (B)", Observed: holders}, err
		}
		return Lesson{Case: "release by plain DEL", Expected: "2 holders (B and C)", Observed: holders}, err
	}
}

// ttl says whether key expires.
func ttl(ctx context.Context, rdb redis.Cmdable, key string) (string, error) {
	d, err := rdb.TTL(ctx, key).Result()
	switch {
	case err != nil:
		return "", err
	case d < 0:
		return "no expiry: never resets", nil
	}
	return "expires", nil
}

// expireNow makes key's TTL run out and waits until Redis has removed it.
func expireNow(ctx context.Context, rdb redis.Cmdable, key string) error {
	if err := rdb.PExpire(ctx, key, time.Millisecond).Err(); err != nil {
		return err
	}
	return poll.Until(time.Second, time.Millisecond, func() error {
		n, err := rdb.Exists(ctx, key).Result()
		if err != nil {
			return poll.Stop(err)
		}
		if n != 0 {
			return fmt.Errorf("beyondonehost: %s did not expire", key)
		}
		return nil
	})
}
