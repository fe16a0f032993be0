package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/storetest"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// The finding: under CGI, which checks nothing at start, a wrong Redis
// password let 40 of 40 through at a limit of 3 — each hit "not counted
// (fail-open)". Refused settings are a configuration error under every
// policy: the hit is not let through.
func TestRefusedSettingsAreNeverAnOutage(t *testing.T) {
	srv := redisserver.ForTest(t)
	c := srv.Client()
	defer c.Close()
	require.NoError(t, c.ConfigSet(context.Background(), "requirepass", "sesame").Err())
	for _, url := range []string{"redis://:wrong@" + srv.Addr + "/0", "redis://:sesame@" + srv.Addr + "/99"} {
		raw, _ := storeAt(t, url)
		refusedUnderEveryPolicy(t, raw, redisstore.ErrRefused)
	}
}

// storeAt is a store on a client of url, and the client, closed when t
// ends.
func storeAt(t *testing.T, url string) (*redisstore.Store, redis.UniversalClient) {
	t.Helper()
	rc, err := redisstore.NewClient(url, 0)
	require.NoError(t, err)
	t.Cleanup(func() { rc.Close() })
	s, err := redisstore.New(rc, redisstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	return s, rc
}

// refusedUnderEveryPolicy takes a hit on raw under fail-open and
// fail-local (fail-closed refuses every error) and requires it refused,
// its error wrapping want.
func refusedUnderEveryPolicy(t *testing.T, raw ratelab.Store, want error) {
	t.Helper()
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
		s := storetest.WithPolicy(raw, policy, slog.New(slog.DiscardHandler))
		d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
		assert.ErrorIs(t, err, want, "fail-%v", policy)
		assert.False(t, d.Allowed, "fail-%v", policy)
	}
}

// A URL that names another service's port is a configuration error, not
// an outage: CheckServer says the server is not Redis, and a hit on it is
// refused under every policy (the attacker's finding: serve pointed at an
// HTTP server called it unreachable, started, and let every hit through
// under fail-open). The server here answers every connection with HTML.
func TestAServerThatIsNotRedisIsNeverAnOutage(t *testing.T) {
	raw, rc := storeAt(t, fakeRedis(t, "<!DOCTYPE HTML>\n<html><body>Error response</body></html>\n"))
	assert.ErrorIs(t, redisstore.CheckServer(context.Background(), rc), redisstore.ErrNotRedis)
	// The breaker's watcher takes the answer for a sign of life, so that
	// the hits reach the store and are refused (the attacker's finding: a
	// breaker opened while Redis was down stayed open once another
	// service took its port, and fail-open let every hit through).
	assert.NoError(t, raw.Ping(context.Background()), "an answer in another protocol is an answer")
	refusedUnderEveryPolicy(t, raw, redisstore.ErrNotRedis)
}

// The finding: under maxmemory-policy allkeys-lru every limiter key was
// evicted and each client got 60 in one window, and the start-up check
// only PINGed. A server that may evict keys is named at start; one whose
// configuration cannot be read says so.
func TestCheckEvictionNamesAServerThatMayEvict(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want error
	}{
		{[]string{"--maxmemory", "3mb", "--maxmemory-policy", "allkeys-lru"}, redisstore.ErrEviction},
		{[]string{"--maxmemory", "3mb", "--maxmemory-policy", "volatile-lru"}, redisstore.ErrEviction},
		{[]string{"--maxmemory", "3mb", "--maxmemory-policy", "noeviction"}, nil},
		{[]string{"--maxmemory-policy", "allkeys-lru"}, nil}, // no maxmemory: nothing is evicted
		{[]string{"--rename-command", "CONFIG", ""}, redisstore.ErrConfigHidden},
	} {
		c := redisserver.ForTest(t, tt.args...).Client()
		err := redisstore.CheckEviction(context.Background(), c)
		c.Close()
		if tt.want == nil {
			assert.NoError(t, err, "%v", tt.args)
			continue
		}
		assert.ErrorIs(t, err, tt.want, "%v", tt.args)
	}
}

// Every primary of a cluster is asked.
func TestCheckEvictionAsksEveryPrimary(t *testing.T) {
	cl := redisserver.ClusterForTest(t)
	ctx := context.Background()
	c, err := redisstore.NewClient(cl.URL(), 0)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, redisstore.CheckEviction(ctx, c))
	last := cl.Nodes[len(cl.Nodes)-1].Client()
	defer last.Close()
	require.NoError(t, last.ConfigSet(ctx, "maxmemory", "3mb").Err())
	require.NoError(t, last.ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err())
	err = redisstore.CheckEviction(ctx, c)
	assert.ErrorIs(t, err, redisstore.ErrEviction)
	if err != nil {
		assert.Contains(t, err.Error(), cl.Nodes[len(cl.Nodes)-1].Addr, "names the node")
	}
}

// An out-of-memory server answers PING and refuses every write: the probe
// write finds it, and leaves nothing behind on a server that accepts it.
func TestCheckWritesFindsAServerThatRefusesThem(t *testing.T) {
	srv := redisserver.ForTest(t, "--maxmemory-policy", "noeviction")
	c := srv.Client()
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, redisstore.CheckWrites(ctx, c, "probe-test:"))
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the probe key is deleted")

	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err()) // full at once
	require.NoError(t, redisstore.CheckServer(ctx, c), "an OOM server answers PING")
	err = redisstore.CheckWrites(ctx, c, "")
	assert.ErrorIs(t, err, redisstore.ErrWritesRefused)
	if err != nil {
		assert.Contains(t, err.Error(), "OOM")
	}
}

// The attacker's finding at 5879fdb: a Redis that filled up while serve
// ran (maxmemory under noeviction) refused every new client's key, and
// fail-open let each of them through. Full is load: the hit is refused
// as busy under fail-open; fail-local decides it in the process.
func TestAFullRedisIsLoad(t *testing.T) {
	srv := redisserver.ForTest(t, "--maxmemory-policy", "noeviction")
	raw, rc := storeAt(t, srv.URL())
	require.NoError(t, rc.ConfigSet(context.Background(), "maxmemory", "1").Err()) // full at once
	s := storetest.WithPolicy(raw, ratelab.FailOpen, slog.New(slog.DiscardHandler))
	d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
	assert.ErrorIs(t, err, ratelab.ErrBusy)
	assert.False(t, d.Allowed, "a hit on a full Redis under fail-open")
	local := storetest.WithPolicy(raw, ratelab.FailLocal, slog.New(slog.DiscardHandler))
	d, err = local.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
	assert.NoError(t, err)
	assert.True(t, d.Allowed && d.Source == ratelab.Local, "fail-local decides it in the process: %+v", d)
}

// The attacker's finding at 657a847: a client seen before the Redis
// filled up was told "allowed, 2 left" by every hit, counted by none —
// the fixed window's INCR on its live count was refused, and the script
// took the count for the hit's. Each of its hits is now refused as load,
// and on a read-only replica an outage; none is a shared decision.
func TestAFullOrReadOnlyRedisCountsNoHitOfALiveWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(rc redis.UniversalClient) error // the server's writes
		want error
	}{
		{"full", func(rc redis.UniversalClient) error {
			return rc.ConfigSet(context.Background(), "maxmemory", "1").Err()
		}, ratelab.ErrBusy},
		{"read-only replica", func(rc redis.UniversalClient) error {
			return rc.Do(context.Background(), "REPLICAOF", "127.0.0.1", "1").Err() // a primary nobody runs: the data stays
		}, ratelab.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redisserver.ForTest(t, "--maxmemory-policy", "noeviction")
			raw, rc := storeAt(t, srv.URL())
			ctx := context.Background()
			d, err := raw.TakeAt(ctx, storetest.Original, storetest.Key, storetest.T0)
			require.NoError(t, err)
			require.True(t, d.Allowed, "the first hit, counted")
			require.NoError(t, tc.stop(rc))
			for i := range 3 {
				d, err = raw.TakeAt(ctx, storetest.Original, storetest.Key, storetest.T0.Add(time.Duration(i+1)*time.Second))
				assert.ErrorIs(t, err, tc.want, "hit %d: %+v", i+2, d)
				assert.False(t, d.Allowed, "hit %d", i+2)
			}
		})
	}
}

// The attacker's finding: a Redis that began refusing the password while
// serve ran (CONFIG SET requirepass, then CLIENT KILL) failed the breaker
// watcher's pings with WRONGPASS, the breaker opened once no hit had been
// answered for 2 s, and under fail-open 50 of 50 requests went through at
// a limit of 5. An error reply is an answer: the server is alive, and
// its refusal is the hits' to report (ErrRefused, never let through).
func TestAServerThatRefusesThePasswordAnswersPings(t *testing.T) {
	srv := redisserver.ForTest(t)
	admin := srv.Client()
	defer admin.Close()
	require.NoError(t, admin.ConfigSet(context.Background(), "requirepass", "sesame").Err())
	rc, err := redisstore.NewClient("redis://:wrong@"+srv.Addr+"/0", 0)
	require.NoError(t, err)
	defer rc.Close()
	s, err := redisstore.New(rc, redisstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.NoError(t, s.Ping(context.Background()), "a refusal is a sign of life")
}

// fakeRedis is a server on loopback that answers every command of every
// connection with answer, whatever was asked, until the client hangs up
// (as many answers as a read holds commands, arrays as clients send
// them). It returns its redis:// URL; the test's end closes it.
func fakeRedis(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := conn.Read(buf)
					if err != nil {
						return
					}
					commands := max(1, len(command.FindAll(buf[:n], -1)))
					if _, err := conn.Write([]byte(strings.Repeat(answer, commands))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "redis://" + ln.Addr().String() + "/0"
}

// command matches the header of a command sent as an array of bulk
// strings.
var command = regexp.MustCompile(`(?:^|\r\n)\*\d+\r\n\$`)

// A Redis loading its dataset answers LOADING: an outage that passes, not
// a configuration to fix (the attacker's finding: serve exited 2 on a
// Redis that answered PING with LOADING).
func TestALoadingRedisIsAnOutage(t *testing.T) {
	rc, err := redisstore.NewClient(fakeRedis(t, "-LOADING Redis is loading the dataset in memory\r\n"), 0)
	require.NoError(t, err)
	t.Cleanup(func() { rc.Close() })
	err = redisstore.CheckServer(context.Background(), rc)
	if err == nil || errors.Is(err, redisstore.ErrRefused) || errors.Is(err, redisstore.ErrNotRedis) {
		t.Errorf("CheckServer of a loading Redis: %v, want an outage (neither ErrRefused nor ErrNotRedis)", err)
	}
}

// A Redis whose scripting is renamed away (as some managed services do)
// answers every hit "ERR unknown command": serve's check says so before
// it starts, and every hit is refused under every policy (the attacker's
// finding: serve started without a word and fail-open let every hit
// through, logging "unknown command 'evalsha'").
func TestARedisWithoutScriptingIsRefused(t *testing.T) {
	srv := redisserver.ForTest(t, "--rename-command", "EVALSHA", "", "--rename-command", "EVAL", "")
	c := srv.Client()
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, redisstore.CheckServer(ctx, c), "it answers PING")
	assert.ErrorIs(t, redisstore.CheckWrites(ctx, c, ""), redisstore.ErrWritesRefused)
	raw, _ := storeAt(t, "redis://"+srv.Addr+"/0")
	refusedUnderEveryPolicy(t, raw, redisstore.ErrRefused)
}

// A cluster or a Sentinel URL that names a plain Redis asks it for what
// it does not have (CLUSTER SLOTS, SENTINEL): serve's check refuses it,
// and a hit is refused under every policy, as the Redis chapter says.
func TestAClusterOrSentinelURLNamingAPlainRedisIsRefused(t *testing.T) {
	srv := redisserver.ForTest(t)
	for _, url := range []string{
		"redis://" + srv.Addr + "/0?addr=" + srv.Addr,
		"redis://" + srv.Addr + "/0?master_name=mymaster",
	} {
		raw, rc := storeAt(t, url)
		err := redisstore.CheckServer(context.Background(), rc)
		if err == nil {
			err = redisstore.CheckWrites(context.Background(), rc, "")
		}
		if !errors.Is(err, redisstore.ErrRefused) && !errors.Is(err, redisstore.ErrWritesRefused) {
			t.Errorf("%s: serve's checks: %v, want a refusal", url, err)
		}
		refusedUnderEveryPolicy(t, raw, redisstore.ErrRefused)
	}
}
