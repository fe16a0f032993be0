package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// !+incrthenexpire

// IncrThenExpire is the counter most hand-written Redis limiters start
// with: INCR, then, if this was the first hit, EXPIRE — two commands. If
// the client dies between them (crashAfterIncr simulates that), the key has
// a count and no expiry: it never resets, and once it passes the limit the
// client is throttled forever. Do not use it; Store runs both in one
// script.
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
