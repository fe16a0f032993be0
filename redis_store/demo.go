package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/claim"
	"github.com/ratelab/ratelab/internal/poll"
)

// Pitfall is one demonstrated mistake or its fix: what was claimed and
// what Redis showed.
type Pitfall = claim.Claim

// !+pitfalls

// Pitfalls demonstrates, against a real Redis, the two classic mistakes
// and their fixes. Expiry is made to happen (PEXPIRE 1, then waiting until
// the key is gone) instead of slept towards.
func Pitfalls(ctx context.Context, rdb redis.Cmdable) ([]Pitfall, error) {
	var out []Pitfall
	ttl := func(key string) (string, error) {
		d, err := rdb.TTL(ctx, key).Result()
		if err != nil {
			return "", err
		}
		if d < 0 {
			return "no expiry: never resets", nil
		}
		return "expires", nil
	}

	// 1. INCR, crash, no EXPIRE.
	if _, err := IncrThenExpire(ctx, rdb, "demo:incr-then-expire", time.Hour, true); err != nil {
		return nil, err
	}
	got, err := ttl("demo:incr-then-expire")
	if err != nil {
		return nil, err
	}
	out = append(out, Pitfall{Case: "INCR, crash, then no EXPIRE", Expected: "no expiry: never resets", Observed: got})

	// 2. The store's script: the expiry is set with the count.
	s, err := New(rdb, Options{})
	if err != nil {
		return nil, err
	}
	rule := ratelab.Rule{Name: "demo", Limit: 30, Window: time.Hour}
	if _, err := s.Take(ctx, rule, "pitfall"); err != nil {
		return nil, err
	}
	if got, err = ttl(s.Key(rule, "pitfall")); err != nil {
		return nil, err
	}
	out = append(out, Pitfall{Case: "count and expiry in one script", Expected: "expires", Observed: got})

	// 3 and 4. A TTL lock released after its TTL ran out.
	for _, safe := range []bool{false, true} {
		key := fmt.Sprintf("demo:lock:%v", safe)
		a, _, err := Acquire(ctx, rdb, key, time.Minute)
		if err != nil || a == nil {
			return nil, fmt.Errorf("redisstore: A could not take a free lock: %v", err)
		}
		if err := expireNow(ctx, rdb, key); err != nil { // A's work outlived its TTL
			return nil, err
		}
		if _, ok, err := Acquire(ctx, rdb, key, time.Minute); err != nil || !ok {
			return nil, fmt.Errorf("redisstore: B could not take the expired lock: %v", err)
		}
		if safe {
			if _, err := a.Release(ctx); err != nil { // checks the token: not A's any more
				return nil, err
			}
		} else if err := a.UnsafeRelease(ctx); err != nil { // deletes B's lock
			return nil, err
		}
		_, cGot, err := Acquire(ctx, rdb, key, time.Minute)
		if err != nil {
			return nil, err
		}
		holders := "1 holder (B)"
		if cGot {
			holders = "2 holders (B and C)"
		}
		if safe {
			out = append(out, Pitfall{Case: "release checks the token", Expected: "1 holder (B)", Observed: holders})
		} else {
			out = append(out, Pitfall{Case: "release by plain DEL", Expected: "2 holders (B and C)", Observed: holders})
		}
	}
	return out, nil
}

// !-pitfalls

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
			return fmt.Errorf("redisstore: %s did not expire", key)
		}
		return nil
	})
}
