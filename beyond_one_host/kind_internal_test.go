package beyondonehost

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The redis kind's own parameters ride in the server's URL and come out
// before go-redis reads it; a URL without them is left as it is; an error
// never quotes the password.
func TestWaitRidesInTheURL(t *testing.T) {
	const u = "redis://:s3cret@127.0.0.1:6379/0"
	assert.Equal(t, u, WithWait(u, 0, time.Second), "no replicas to wait for: the URL as it is")
	with := WithWait(u, 1, 50*time.Millisecond)
	clean, o, err := redisOptions(with)
	require.NoError(t, err)
	assert.Equal(t, u, clean)
	assert.Equal(t, 1, o.WaitReplicas)
	assert.Equal(t, 50*time.Millisecond, o.WaitTimeout)
	plain, o, err := redisOptions(u)
	require.NoError(t, err)
	assert.Equal(t, u, plain)
	assert.Zero(t, o.WaitReplicas)

	_, _, err = redisOptions("redis://:S3cret pw@127.0.0.1:6379/0?wait=1")
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "S3cret")
	_, _, err = redisOptions("redis://127.0.0.1:6379/0?wait=x")
	assert.ErrorContains(t, err, `wait="x"`)
}
