package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/lab/redisserver"
)

// startRedis starts a private redis-server with args for t, or skips t.
func startRedis(t *testing.T, args ...string) *redisserver.Server {
	t.Helper()
	srv, err := redisserver.Start(args...)
	if errors.Is(err, redisserver.ErrNoServer) {
		t.Skip("redis-server not found: install it with " + redisserver.InstallHint)
	}
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return srv
}

// The finding: a Redis that evicts keys resets counts silently, and an
// out-of-memory Redis answers PING. serve refuses both before printing its
// URL (exit 2); -redis-allow-eviction accepts eviction, with one warning.
func TestServeRefusesARedisThatMayEvictOrRefusesWrites(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		srv := startRedis(t, "--maxmemory", "3mb", "--maxmemory-policy", policy)
		args := []string{"-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0"}
		url, code, stderr := startServe(t, "", args...)
		assert.Empty(t, url, policy)
		assert.Equal(t, 2, code, "%s: %s", policy, stderr.String())
		assert.Contains(t, stderr.String(), "maxmemory-policy "+policy, policy)

		url, code, stderr = startServe(t, "", append(args, "-redis-allow-eviction")...)
		require.NotEmpty(t, url, "%s with -redis-allow-eviction: serve exited %d: %s", policy, code, stderr.String())
		assert.Eventually(t, func() bool { return strings.Contains(stderr.String(), "warning") }, 5*time.Second, time.Millisecond)
		assert.Equal(t, 1, strings.Count(stderr.String(), "warning:"), "one warning: %s", stderr.String())
		assert.Contains(t, stderr.String(), "maxmemory-policy "+policy, policy)
	}

	srv := startRedis(t, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction")
	url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0")
	require.NotEmpty(t, url, "noeviction: serve exited %d: %s", code, stderr.String())
	assert.NotContains(t, stderr.String(), "warning")

	c := srv.Client()
	defer c.Close()
	require.NoError(t, c.ConfigSet(context.Background(), "maxmemory", "1").Err()) // full: every write is OOM
	url, code, stderr = startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-addr", "127.0.0.1:0")
	assert.Empty(t, url)
	assert.Equal(t, 2, code, stderr.String())
	assert.Contains(t, stderr.String(), "refuses writes")
}

// -redis-wait reaches the store of every process: with no replica to
// confirm them, fail-closed refuses every hit (503), and fail-open decides
// each on the primary's count, which counted it.
func TestServeRedisWait(t *testing.T) {
	srv := startRedis(t)
	for _, tt := range []struct {
		fail string
		want []int
	}{
		{"closed", []int{503, 503, 503}},
		{"open", []int{200, 200, 429}},
	} {
		url, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-limit", "2",
			"-redis-wait", "1", "-redis-wait-timeout", "20ms", "-fail", tt.fail, "-addr", "127.0.0.1:0")
		require.NotEmpty(t, url, "serve exited %d: %s", code, stderr.String())
		var got []int
		for range 3 {
			resp, err := http.Post(url, "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			got = append(got, resp.StatusCode)
		}
		assert.Equal(t, tt.want, got, "-fail %s", tt.fail)
		c := srv.Client()
		require.NoError(t, c.FlushAll(context.Background()).Err())
		c.Close()
	}
	_, code, stderr := startServe(t, "", "-model", "cgi", "-store", "redis", "-redis", srv.URL(), "-redis-wait", "1", "-redis-wait-timeout", "5s")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "must be shorter than Timeout", stderr.String())
}
