package beyondonehost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/redact"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// Redis is the harness's kind of the Redis store: every process on every
// host that reaches one Redis shares its counts. A program that imports
// this package can run it under every execution model.
const Redis harness.StoreKind = "redis"

func init() {
	harness.Register(Redis, harness.Kind{Reach: harness.AllHosts, Shares: "one Redis", Check: checkRedis, Open: openRedis})
}

// Unreachable is the Redis of OutageDemo: a port on loopback that nobody
// listens on, so every connection is refused at once.
const Unreachable = "redis://127.0.0.1:1/0"

// The parameters of an App's Server that the redis kind reads itself, as
// the store's WaitReplicas and WaitTimeout, and takes out before go-redis
// reads the URL.
const (
	paramWait        = "wait"
	paramWaitTimeout = "wait_timeout"
)

// WithWait returns the Redis URL u with the store's WaitReplicas and
// WaitTimeout in it, for an App's Server; u itself when replicas is 0.
func WithWait(u string, replicas int, timeout time.Duration) string {
	if replicas == 0 {
		return u
	}
	sep := "?"
	if p, err := url.Parse(u); err == nil && p.RawQuery != "" {
		sep = "&"
	}
	return fmt.Sprintf("%s%s%s=%d&%s=%s", u, sep, paramWait, replicas, paramWaitTimeout, timeout)
}

// redisOptions splits an App's Server into the URL go-redis reads and the
// store's options. A URL without them is go-redis's to read as it is; an
// error never quotes the password.
func redisOptions(server string) (string, redisstore.Options, error) {
	var o redisstore.Options
	if !strings.Contains(server, paramWait+"=") && !strings.Contains(server, paramWaitTimeout+"=") {
		return server, o, nil
	}
	p, err := url.Parse(server)
	if err != nil {
		return "", o, redact.Err(fmt.Errorf("redis URL: %w", err), server)
	}
	q := p.Query()
	if v := q.Get(paramWait); v != "" {
		if o.WaitReplicas, err = strconv.Atoi(v); err != nil {
			return "", o, fmt.Errorf("redis URL: %s=%q: %w", paramWait, v, err)
		}
	}
	if v := q.Get(paramWaitTimeout); v != "" {
		if o.WaitTimeout, err = time.ParseDuration(v); err != nil {
			return "", o, fmt.Errorf("redis URL: %s=%q: %w", paramWaitTimeout, v, err)
		}
	}
	q.Del(paramWait)
	q.Del(paramWaitTimeout)
	p.RawQuery = q.Encode()
	return p.String(), o, nil
}

func checkRedis(a harness.App) error {
	if a.Server == "" {
		return errors.New("harness: the redis store needs a server (-redis redis://127.0.0.1:6379/0, or RATELAB_REDIS)")
	}
	_, o, err := redisOptions(a.Server)
	if err != nil {
		return err
	}
	return o.Check()
}

// openRedis opens the store of one process. go-redis has one logger per
// process: its lines (a dial that failed) become records of log, as the
// store's own are.
func openRedis(a harness.App, log *slog.Logger) (ratelab.Store, io.Closer, error) {
	u, o, err := redisOptions(a.Server)
	if err != nil {
		return nil, nil, err
	}
	redis.SetLogger(redisstore.NewGoRedisLog(log))
	c, err := redisstore.NewClient(u, 0)
	if err != nil {
		return nil, nil, err
	}
	o.Logger, o.Prefix = log, a.Prefix
	s, err := redisstore.New(c, o)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return s, c, nil
}

// OutageDemo runs every model, one by one and as a burst, with a shared
// store that cannot answer — a Redis nobody listens for — under
// app.FailPolicy: fail-open lets every hit through; fail-local decides in
// each process alone, which is the in-memory store's lesson again.
func OutageDemo(ctx context.Context, app harness.App, workers int, w httphost.Workload, progress io.Writer) (httphost.Report, error) {
	app.Store, app.Server = Redis, Unreachable
	var cases []httphost.Case
	for _, m := range harness.Models() {
		cases = append(cases, httphost.Case{Model: m, App: app})
	}
	rep := httphost.Report{Store: "redis (nobody listening) fail=" + app.FailPolicy.String(), Outage: true}
	return httphost.RunCases(ctx, rep, cases, workers, w, "", nil, progress)
}

// RedisDemo runs the two-hosts model with the file store and with Redis,
// and Redis under the other models, one by one and as a burst. reset runs
// before every row so that each starts with an empty Redis.
func RedisDemo(ctx context.Context, app harness.App, workers int, w httphost.Workload, dir, redisURL string, reset func() error, progress io.Writer) (httphost.Report, error) {
	file, rds := app, app
	file.Store, rds.Store, rds.Server = harness.File, Redis, redisURL
	cases := []httphost.Case{{Model: harness.TwoHosts, App: file}, {Model: harness.TwoHosts, App: rds}}
	for _, m := range []harness.Model{harness.Single, harness.Pool, harness.CGI} {
		cases = append(cases, httphost.Case{Model: m, App: rds})
	}
	return httphost.RunCases(ctx, httphost.Report{Store: "file, redis"}, cases, workers, w, dir, reset, progress)
}

// ClientURL is the URL go-redis reads from an App's Server: the redis
// kind's own parameters taken out.
func ClientURL(server string) (string, error) {
	u, _, err := redisOptions(server)
	return u, err
}
