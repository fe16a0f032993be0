package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrRefused is wrapped by CheckServer's error when Redis answered but
// refused the client: a wrong password or user, a database index out of
// range. That is a configuration error to fix before serving, not an
// outage for the fail policy.
var ErrRefused = errors.New("redisstore: redis refused the connection's settings")

// ErrNotRedis is wrapped by CheckServer's error when the server answered
// in something other than Redis's protocol (RESP): the URL names another
// service's port, an HTTP server's say. A configuration error, not an
// outage.
var ErrNotRedis = errors.New("redisstore: the server does not answer in Redis's protocol")

// probeScript is the script CheckWrites runs.
var probeScript = redis.NewScript("return 1")

// ErrWritesRefused is wrapped by CheckWrites's error when Redis answered a
// write or a script with an error: out of memory under maxmemory-policy noeviction
// (OOM), a read-only replica (READONLY), a user without the right. Such a
// server answers PING, and refuses every hit's script.
var ErrWritesRefused = errors.New("redisstore: redis refuses writes")

// ErrEviction is wrapped by CheckEviction's error when Redis may evict the
// store's keys: a maxmemory limit with any maxmemory-policy but
// noeviction. An evicted key is a count lost — the next hit starts afresh
// at 1, under every fail policy, and nothing is logged. Under allkeys-*
// every key may go; under volatile-* only keys with an expiry may, and
// every key of the store has one: the limiter's keys are the first to go.
var ErrEviction = errors.New("redisstore: redis may evict the limiter's keys, each eviction resetting a count")

// ErrConfigHidden is wrapped by CheckEviction's error when Redis does not
// let the client read its configuration (CONFIG renamed or forbidden, as
// managed services do): whether it evicts keys is unknown.
var ErrConfigHidden = errors.New("redisstore: cannot read redis's maxmemory settings (CONFIG GET refused)")

// CheckServer asks Redis for a PING with the client's settings (password,
// user, database). It returns nil when Redis answers, an error wrapping
// ErrRefused when Redis answers with an error that is not a passing state
// (LOADING, BUSY and the like, which are outages), one wrapping
// ErrNotRedis when the answer is not Redis's protocol, and another error
// when Redis cannot be reached — an outage, which the fail policy
// handles once hits come.
func CheckServer(ctx context.Context, rdb redis.Cmdable) error {
	err := rdb.Ping(ctx).Err()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr) && !passing(err):
		return fmt.Errorf("%w: %w", ErrRefused, err)
	case notRedis(err):
		return fmt.Errorf("%w: %w", ErrNotRedis, err)
	}
	return err
}

// CheckWrites writes a probe key under prefix ("" means the store's
// default, "ratelab:") with a 10 s expiry, deletes it, and runs a script
// as every hit does (EVALSHA, then EVAL). It returns an error wrapping
// ErrWritesRefused when Redis refuses the write or the script (scripting
// renamed or forbidden, as some managed services do), and another error
// when Redis cannot be reached.
func CheckWrites(ctx context.Context, rdb redis.Cmdable, prefix string) error {
	key := cmp.Or(prefix, defaultPrefix) + "probe:" + rand.Text()
	err := rdb.Set(ctx, key, "1", 10*time.Second).Err()
	if err == nil {
		err = rdb.Del(ctx, key).Err()
	}
	if err == nil {
		err = probeScript.Run(ctx, rdb, nil).Err()
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !passing(err) {
		return fmt.Errorf("%w: %w", ErrWritesRefused, err)
	}
	return err
}

// CheckEviction reads maxmemory and maxmemory-policy (CONFIG GET) from
// Redis, from every primary of a cluster. It returns nil when no key can
// be evicted (noeviction, or no maxmemory), an error wrapping ErrEviction
// when keys can, one wrapping ErrConfigHidden when Redis does not say, and
// another error when Redis cannot be reached.
func CheckEviction(ctx context.Context, rdb redis.Cmdable) error {
	if cluster, ok := rdb.(*redis.ClusterClient); ok {
		return cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return checkEviction(ctx, c, c.Options().Addr+": ")
		})
	}
	return checkEviction(ctx, rdb, "")
}

// checkEviction is CheckEviction of one server, named by where in errors.
func checkEviction(ctx context.Context, rdb redis.Cmdable, where string) error {
	cfg, err := rdb.ConfigGet(ctx, "maxmemory*").Result()
	var rerr redis.Error
	switch {
	case errors.As(err, &rerr):
		return fmt.Errorf("%w: %s%w", ErrConfigHidden, where, err)
	case err != nil:
		return err
	}
	policy, limit := cfg["maxmemory-policy"], cfg["maxmemory"]
	switch {
	case policy == "" || limit == "":
		return fmt.Errorf("%w: %sno maxmemory settings in the reply", ErrConfigHidden, where)
	case policy == "noeviction" || limit == "0":
		return nil
	}
	return fmt.Errorf("%w: %smaxmemory-policy %s with maxmemory %s; set maxmemory-policy noeviction", ErrEviction, where, policy, limit)
}
