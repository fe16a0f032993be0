package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"

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
		for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
			rc, err := redisstore.NewClient(url, 0)
			require.NoError(t, err)
			raw, err := redisstore.New(rc, redisstore.Options{Logger: slog.New(slog.DiscardHandler)})
			require.NoError(t, err)
			s := storetest.WithPolicy(raw, policy, slog.New(slog.DiscardHandler))
			d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
			assert.ErrorIs(t, err, redisstore.ErrRefused, "%s, fail-%v", url, policy)
			assert.False(t, d.Allowed, "%s, fail-%v", url, policy)
			rc.Close()
		}
	}
}

// A URL that names another service's port is a configuration error, not
// an outage: CheckServer says the server is not Redis, and a hit on it is
// refused under every policy (the attacker's finding: serve pointed at an
// HTTP server called it unreachable, started, and let every hit through
// under fail-open). The server here answers every connection with HTML.
func TestAServerThatIsNotRedisIsNeverAnOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	answerEveryConnection(t, ln, "<!DOCTYPE HTML>\n<html><body>Error response</body></html>\n")
	rc, err := redisstore.NewClient("redis://"+ln.Addr().String()+"/0", 0)
	require.NoError(t, err)
	t.Cleanup(func() { rc.Close() })
	assert.ErrorIs(t, redisstore.CheckServer(context.Background(), rc), redisstore.ErrNotRedis)
	raw, err := redisstore.New(rc, redisstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	// The breaker's watcher takes the answer for a sign of life, so that
	// the hits reach the store and are refused (the attacker's finding: a
	// breaker opened while Redis was down stayed open once another
	// service took its port, and fail-open let every hit through).
	assert.NoError(t, raw.Ping(context.Background()), "an answer in another protocol is an answer")
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
		s := storetest.WithPolicy(raw, policy, slog.New(slog.DiscardHandler))
		d, err := s.TakeAt(context.Background(), storetest.Original, storetest.Key, storetest.T0)
		assert.ErrorIs(t, err, redisstore.ErrNotRedis, "fail-%v", policy)
		assert.False(t, d.Allowed, "fail-%v", policy)
	}
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

// answerEveryConnection answers every command of every connection ln
// accepts with answer, whatever was asked, until the client hangs up: as
// many answers as a read holds commands (arrays, as clients send them).
func answerEveryConnection(t *testing.T, ln net.Listener, answer string) {
	t.Helper()
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
}

// command matches the header of a command sent as an array of bulk
// strings.
var command = regexp.MustCompile(`(?:^|\r\n)\*\d+\r\n\$`)

// A Redis loading its dataset answers LOADING: an outage that passes, not
// a configuration to fix (the attacker's finding: serve exited 2 on a
// Redis that answered PING with LOADING).
func TestALoadingRedisIsAnOutage(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	answerEveryConnection(t, ln, "-LOADING Redis is loading the dataset in memory\r\n")
	rc, err := redisstore.NewClient("redis://"+ln.Addr().String()+"/0", 0)
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
	rc, err := redisstore.NewClient("redis://"+srv.Addr+"/0", 0)
	require.NoError(t, err)
	defer rc.Close()
	raw, err := redisstore.New(rc, redisstore.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailLocal} {
		s := storetest.WithPolicy(raw, policy, slog.New(slog.DiscardHandler))
		d, err := s.TakeAt(ctx, storetest.Original, storetest.Key, storetest.T0)
		assert.ErrorIs(t, err, redisstore.ErrRefused, "fail-%v", policy)
		assert.False(t, d.Allowed, "fail-%v", policy)
	}
}
