package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/hostport"
	"github.com/ratelab/ratelab/internal/logevery"
	"github.com/ratelab/ratelab/internal/redact"
)

// NewClient returns a client for a redis:// URL with timeouts suited to a
// rate limiter: timeout applies to every command (ContextTimeoutEnabled),
// dials and waits for a pooled connection give up after the same time,
// and neither failed commands nor
// refused dials are retried — a limiter must answer quickly, not
// eventually, and a refused connection (nobody listening) is an outage
// for the fail policy at once, where go-redis would dial five times, 100
// ms apart. (A cluster client retries a command that failed on the
// network whatever MaxRetries says; the store's scripts tell it not to,
// as a script whose reply was lost may have run.)
//
// A URL with addr parameters names a Redis Cluster, in go-redis's
// ParseClusterURL form — redis://host1:port1?addr=host2:port2&addr=host3:port3
// — and gets a cluster client, which follows MOVED and ASK redirects (up
// to three) while slots move, and which a Store tells to reload its map
// of the slots whenever a hit fails on the network: a primary that died
// is left for its promoted replica within a second or so, where go-redis
// alone would wait for its periodic reload, once a minute. Every script
// of the store touches one key, so one hash slot, as a cluster requires.
//
// A URL with a master_name parameter names Sentinels, in go-redis's
// ParseFailoverURL form — redis://sentinel1:26379/0?master_name=mymaster
// (more sentinels as addr parameters) — and gets a failover client, which
// asks the sentinels for the current primary and follows a failover.
func NewClient(url string, timeout time.Duration) (redis.UniversalClient, error) {
	timeout = cmp.Or(max(timeout, 0), DefaultTimeout)
	if !strings.Contains(url, "://") { // go-redis reads redis:host:port as no host at all, and dials localhost:6379
		return nil, errors.New("redisstore: the URL names no server: write redis://host:port/db (or unix:///path)")
	}
	o, err := parseURL(url)
	if err == nil {
		err = checkAddrs(o.network, o.addrs...)
	}
	if err == nil && (*o.poolSize < 0 || *o.poolSize > MaxPoolSize) { // go-redis panics making such a pool
		err = fmt.Errorf("pool_size %d must be from 0 (go-redis's default) to %d", *o.poolSize, MaxPoolSize)
	}
	if err != nil && strings.Contains(err.Error(), "unexpected option") {
		// go-redis names them: an unescaped '&' in a password splits it
		// into options, whose names are pieces of the password.
		err = errors.New("the URL has query options go-redis does not know (not named: an '&' in a password splits it into options; write it as %26)")
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: %w", redact.Err(err, url))
	}
	*o.contextTimeout = true
	*o.dial, *o.read, *o.write, *o.pool = timeout, timeout, timeout, timeout
	*o.maxRetries, *o.dialerRetries = -1, 1
	return o.client(), nil
}

// MaxPoolSize is the most connections NewClient lets a URL's pool_size
// ask for; each is a file descriptor, and a limiter needs few.
const MaxPoolSize = 1000

// GoRedisLog writes go-redis's own log lines — a dial that failed, what
// a sentinel answered — to a slog.Logger as warnings, with the store's
// other records, where go-redis would write them unstructured to
// standard error; each of its formats at most once every
// ratelab.LogEvery, with how many were held back (a breaker pings an
// unreachable Redis five times a second, and each ping's dial fails
// aloud). A URL's user information and a password= value in a line are
// masked (redact.Line). go-redis has one logger for the whole process, not one per
// client, so the store cannot set it: a program does, once, in main:
//
//	redis.SetLogger(redisstore.NewGoRedisLog(logger))
type GoRedisLog struct{ log *logevery.Log }

// NewGoRedisLog returns a GoRedisLog writing to logger.
func NewGoRedisLog(logger *slog.Logger) *GoRedisLog {
	return &GoRedisLog{logevery.New(logger, ratelab.LogEvery)}
}

// Printf logs one of go-redis's lines as a warning.
func (l *GoRedisLog) Printf(_ context.Context, format string, v ...any) {
	l.printfAt(time.Now(), format, v...)
}

func (l *GoRedisLog) printfAt(now time.Time, format string, v ...any) {
	msg := strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: ")
	l.log.KeyAt(now, format, slog.LevelWarn, "redisstore: go-redis: "+redact.Line(msg))
}

// parsed is a URL parsed into the options of one kind of go-redis
// client: the addresses to check, the settings every kind has, which
// NewClient sets, and the constructor of the client.
type parsed struct {
	network                   string
	addrs                     []string
	contextTimeout            *bool
	dial, read, write, pool   *time.Duration
	maxRetries, dialerRetries *int
	poolSize                  *int
	client                    func() redis.UniversalClient
}

// parseURL parses url as go-redis parses the kind of URL it is: a
// sentinel's, a cluster's or a single server's.
func parseURL(url string) (parsed, error) {
	switch {
	case isSentinelURL(url):
		o, err := redis.ParseFailoverURL(url)
		if err != nil {
			return parsed{}, err
		}
		return parsed{"tcp", o.SentinelAddrs, &o.ContextTimeoutEnabled, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
			&o.MaxRetries, &o.DialerRetries, &o.PoolSize, func() redis.UniversalClient { return redis.NewFailoverClient(o) }}, nil
	case isClusterURL(url):
		o, err := redis.ParseClusterURL(url)
		if err != nil {
			return parsed{}, err
		}
		return parsed{"tcp", o.Addrs, &o.ContextTimeoutEnabled, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
			&o.MaxRetries, &o.DialerRetries, &o.PoolSize, func() redis.UniversalClient { return redis.NewClusterClient(o) }}, nil
	}
	o, err := redis.ParseURL(url)
	if err != nil {
		return parsed{}, err
	}
	return parsed{o.Network, []string{o.Addr}, &o.ContextTimeoutEnabled, &o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout,
		&o.MaxRetries, &o.DialerRetries, &o.PoolSize, func() redis.UniversalClient { return redis.NewClient(o) }}, nil
}

// isSentinelURL reports whether url names Sentinels (master_name=).
func isSentinelURL(raw string) bool {
	u, err := neturl.Parse(raw)
	return err == nil && u.Query().Has("master_name")
}

// isClusterURL reports whether url names more than one node (addr=).
func isClusterURL(raw string) bool {
	u, err := neturl.Parse(raw)
	return err == nil && u.Query().Has("addr")
}

// checkAddrs reports the first of addrs that is not a usable host:port;
// a Unix socket's path is not checked.
func checkAddrs(network string, addrs ...string) error {
	if network == "unix" {
		return nil
	}
	for _, a := range addrs {
		if err := hostport.Check(a); err != nil {
			return err
		}
	}
	return nil
}

// refused reports whether err is Redis refusing the client's settings: a
// wrong password or user, a user without the right, a database index out
// of range, a command it does not have (scripting renamed away, a cluster
// or Sentinel URL naming a plain Redis). The hit's round trip did not
// fail; the configuration did.
func refused(err error) bool {
	return reply(err, "WRONGPASS", "NOAUTH", "NOPERM", "ERR AUTH", "ERR invalid DB index", "ERR DB index is out of range",
		"ERR unknown command", "ERR This instance has cluster support disabled")
}

// reply reports whether err is an error reply of Redis that starts with
// one of prefixes.
func reply(err error, prefixes ...string) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(rerr.Error(), p) })
}

// notRedis reports whether err is go-redis's reader failing on an answer
// that is not Redis's protocol, RESP — "invalid reply", "can't parse":
// the server is another service. go-redis gives these errors no type.
func notRedis(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "redis: invalid reply") || strings.Contains(err.Error(), "redis: can't parse"))
}

// passing reports whether err is an error reply of a Redis that will
// answer again by itself: loading its dataset, busy in a script, a
// replica without its primary, a cluster resharding or down. An outage,
// where any other error reply is a refusal.
func passing(err error) bool {
	return reply(err, "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")
}
