package redisstore_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	redisstore "github.com/ratelab/ratelab/redis_store"
)

// The finding: go-redis dials five times, 100 ms apart, before a refused
// connection fails, so with Redis down every hit waited half a second for
// its fail policy (a demo of 420 hits took 120 s). NewClient dials once,
// and never retries a command.
func TestNewClientDialsOnceAndNeverRetries(t *testing.T) {
	for _, url := range []string{
		"redis://127.0.0.1:6379/0",
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001",
		"redis://127.0.0.1:26379/0?master_name=mymaster",
	} {
		c, err := redisstore.NewClient(url, 0)
		require.NoError(t, err)
		var retries, dials int
		switch c := c.(type) {
		case *redis.Client:
			retries, dials = c.Options().MaxRetries, c.Options().DialerRetries
		case *redis.ClusterClient:
			retries, dials = c.Options().MaxRetries, c.Options().DialerRetries
		default:
			t.Fatalf("%s: a %T", url, c)
		}
		assert.LessOrEqual(t, retries, 0, "%s: MaxRetries (-1 is kept as 0: none)", url)
		assert.Equal(t, 1, dials, "%s: DialerRetries", url)
		c.Close()
	}
}

// Every kind of client gets the limiter's timeout on dials, reads and
// writes, and takes the context's deadline for every command.
func TestNewClientTimesEveryKindOut(t *testing.T) {
	type settings struct {
		contextTimeout     bool
		dial, read, write  time.Duration
		network, firstAddr string
	}
	const timeout = 300 * time.Millisecond
	for _, tt := range []struct{ url, network, addr string }{
		{"redis://127.0.0.1:6379/0", "tcp", "127.0.0.1:6379"},
		{"unix:///tmp/ratelab-test.sock", "unix", "/tmp/ratelab-test.sock"},
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001", "", "127.0.0.1:7000"},
		{"redis://127.0.0.1:26379/0?master_name=mymaster", "tcp", "FailoverClient"},
	} {
		c, err := redisstore.NewClient(tt.url, timeout)
		require.NoError(t, err, tt.url)
		var got settings
		switch c := c.(type) {
		case *redis.Client:
			o := c.Options()
			got = settings{o.ContextTimeoutEnabled, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.Network, o.Addr}
		case *redis.ClusterClient:
			o := c.Options()
			got = settings{o.ContextTimeoutEnabled, o.DialTimeout, o.ReadTimeout, o.WriteTimeout, "", o.Addrs[0]}
		}
		want := settings{true, timeout, timeout, timeout, tt.network, tt.addr}
		assert.Equal(t, want, got, tt.url)
		c.Close()
	}
}

// A port that cannot exist is a configuration error, not an outage; the
// password of a URL the parser refuses is not quoted back.
func TestNewClientRefusesBadURLs(t *testing.T) {
	for _, url := range []string{"redis://127.0.0.1:99999/0", "redis://127.0.0.1:7000?addr=127.0.0.1:0", "redis://:S3cret pw@127.0.0.1:6379/0"} {
		_, err := redisstore.NewClient(url, 0)
		require.Error(t, err, url)
		assert.NotContains(t, err.Error(), "S3cret", url)
	}
}

// The attacker's finding: a pool_size go-redis cannot make a pool of
// panicked in NewClient (makechan: size out of range, with a stack), where
// bad input must get a clear error. Each kind of client is checked.
func TestNewClientRefusesAPoolItCannotMake(t *testing.T) {
	for _, url := range []string{
		"redis://127.0.0.1:6379/0?pool_size=-1",
		"redis://127.0.0.1:6379/0?pool_size=99999999999",
		"redis://127.0.0.1:6379/0?pool_size=1001",
		"redis://127.0.0.1:7000?addr=127.0.0.1:7001&pool_size=-1",
		"redis://127.0.0.1:26379/0?master_name=m&pool_size=-1",
	} {
		_, err := redisstore.NewClient(url, 0)
		if assert.Error(t, err, url) {
			assert.Contains(t, err.Error(), "must be from 0 (go-redis's default) to 1000", url)
		}
	}
	c, err := redisstore.NewClient("redis://127.0.0.1:6379/0?pool_size=1000", 0)
	require.NoError(t, err, "the largest pool allowed")
	c.Close()
}

// go-redis's lines are held to one per format every ratelab.LogEvery: a
// breaker pings an unreachable Redis five times a second, and each ping's
// failed dial was a line, for as long as the outage lasted.
func TestGoRedisLogHoldsBackRepeats(t *testing.T) {
	var logged bytes.Buffer
	l := redisstore.NewGoRedisLog(slog.New(slog.NewTextHandler(&logged, nil)))
	t0 := time.Unix(1_780_000_000, 0)
	const dial = "redis: connection pool: failed to dial after %d attempts: %v"
	for i := range 51 { // ten seconds of pings, five a second, and one more
		l.PrintfAt(t0.Add(time.Duration(i)*ratelab.LogEvery/50), dial, 1, "connection refused")
	}
	l.PrintfAt(t0, "sentinel: new master=%q addr=%q", "m", "127.0.0.1:1")
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 3, logged.String())
	assert.Contains(t, lines[0], `msg="redisstore: go-redis: connection pool: failed to dial after 1 attempts: connection refused"`)
	assert.Contains(t, lines[1], "held_back=49")
	assert.Contains(t, lines[2], "sentinel: new master")
}

// go-redis's lines are not passed a connection string to mask by, so
// whatever sits where a URL's password goes is masked.
func TestGoRedisLogMasksPasswords(t *testing.T) {
	var logged bytes.Buffer
	l := redisstore.NewGoRedisLog(slog.New(slog.NewTextHandler(&logged, nil)))
	l.PrintfAt(time.Unix(1_780_000_000, 0), "redis: sentinel %s: %v", "redis://u:S3cret@127.0.0.1:1", "refused")
	assert.NotContains(t, logged.String(), "S3cret")
	assert.Contains(t, logged.String(), "redis://xxxxx@127.0.0.1:1")
}

// The attacker's finding at 0574388: an unescaped '&' in a query password
// splits it into options, and go-redis names the ones it does not know —
// pieces of the password.
func TestNewClientNamesNoUnknownOption(t *testing.T) {
	_, err := redisstore.NewClient("redis://127.0.0.1:1/0?password=Qj&Zk=Vw", 0)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "Zk")
	assert.NotContains(t, err.Error(), "Vw")
	assert.Contains(t, err.Error(), "%26")
}
