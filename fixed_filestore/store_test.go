//go:build linux || darwin

package fixedfilestore_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/storetest"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

var t0 = storetest.T0

// newStore returns a store on a fresh base directory and its log.
func newStore(t *testing.T, opts fixedfilestore.Options) (*fixedfilestore.Store, *syncbuf.Buffer) {
	t.Helper()
	return newStoreAt(t, t.TempDir(), opts)
}

func newStoreAt(t *testing.T, base string, opts fixedfilestore.Options) (*fixedfilestore.Store, *syncbuf.Buffer) {
	t.Helper()
	logs := new(syncbuf.Buffer)
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	s, err := fixedfilestore.New(base, opts)
	require.NoError(t, err)
	return s, logs
}

func hit(t *testing.T, s *fixedfilestore.Store, at time.Time) ratelab.Hit {
	t.Helper()
	h, err := s.HitAt(storetest.Key, time.Hour, at)
	require.NoError(t, err)
	return h
}

func TestWindow(t *testing.T) {
	storetest.Window(t, func(t *testing.T) ratelab.Store {
		s, _ := newStore(t, fixedfilestore.Options{})
		return s
	})
}

// The original's cross-process test: two instances on one directory share
// the count, as two processes do.
func TestStateSurvivesAcrossInstances(t *testing.T) {
	base := t.TempDir()
	got := storetest.CrossInstance(t, func(t *testing.T) ratelab.Store {
		s, _ := newStoreAt(t, base, fixedfilestore.Options{})
		return s
	})
	assert.Equal(t, int64(2), got)
}

func TestOnDiskFormatMatchesTheOriginal(t *testing.T) {
	base := t.TempDir()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	hit(t, s, t0)
	hit(t, s, t0.Add(time.Second))

	sum := sha256.Sum256([]byte(storetest.Key))
	path := filepath.Join(base, "rate-limits", hex.EncodeToString(sum[:])+".json")
	assert.Equal(t, path, s.Path(storetest.Key))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	// What PHP's json_encode(['count' => 2, 'reset_at' => 1783558800]) writes.
	assert.Equal(t, `{"count":2,"reset_at":1783558800}`, string(got))

	// A file the PHP original wrote is read as is.
	require.NoError(t, os.WriteFile(path, []byte(`{"count":29,"reset_at":1783558800}`), 0o600))
	assert.Equal(t, int64(30), hit(t, s, t0.Add(2*time.Second)).Count)
}

func TestPermissions(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	hit(t, s, t0)
	di, err := os.Stat(s.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm(), "state directory")
	fi, err := os.Stat(s.Path(storetest.Key))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "state file")
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, st := range []ratelab.State{{Count: 0, ResetAt: 1}, {Count: 31, ResetAt: 1783558800}, {Count: 1<<63 - 1, ResetAt: 1<<63 - 1}} {
		got, err := fixedfilestore.Decode(fixedfilestore.Encode(nil, st))
		require.NoError(t, err)
		assert.Equal(t, st, got)
	}
	// The reader accepts what other JSON writers may produce.
	got, err := fixedfilestore.Decode([]byte(" { \"reset_at\": 1783558800, \"count\": 3 }\n"))
	require.NoError(t, err)
	assert.Equal(t, ratelab.State{Count: 3, ResetAt: 1783558800}, got)
}

func TestCorruptStateIsLoggedAndReplaced(t *testing.T) {
	tests := []struct {
		name, content, wantErr string
	}{
		{"garbage", "\x00\xffnot json at all", "not valid JSON"},
		{"truncated", `{"count":12,"res`, "not valid JSON"},
		{"huge", `{"count":1,"reset_at":1783558800}` + strings.Repeat(" ", 1<<20), "larger than"},
		{"negative count", `{"count":-5,"reset_at":1783558800}`, "negative"},
		{"missing reset_at", `{"count":5}`, "lacks"},
		{"null", `null`, "lacks"},
		{"array", `[1,2]`, "not valid JSON"},
		{"float count", `{"count":1.5,"reset_at":1783558800}`, "not valid JSON"},
		{"string count", `{"count":"9","reset_at":1783558800}`, "not valid JSON"},
		{"zero reset_at", `{"count":5,"reset_at":0}`, "not a Unix time"},
		{"trailing data", `{"count":5,"reset_at":1783558800}{"count":1}`, "after its JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
				s, logs := newStore(t, fixedfilestore.Options{FailPolicy: policy})
				path := s.Path(storetest.Key)
				require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))

				h := hit(t, s, t0)
				assert.Equal(t, int64(1), h.Count, "policy %v: a fresh window", policy)
				assert.NoError(t, h.NotCounted, "policy %v: the hit is counted in the fresh window", policy)
				assert.Contains(t, logs.String(), "corrupt state replaced", "policy %v", policy)
				assert.Contains(t, logs.String(), tt.wantErr, "policy %v", policy)
				assert.Contains(t, logs.String(), path, "policy %v", policy)

				got, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, `{"count":1,"reset_at":1783558800}`, string(got), "policy %v: repaired", policy)
				assert.Equal(t, int64(2), hit(t, s, t0).Count, "policy %v: counting resumes", policy)
			}
		})
	}
}

func TestEmptyFileIsAFreshWindowWithoutComplaint(t *testing.T) {
	s, logs := newStore(t, fixedfilestore.Options{})
	require.NoError(t, os.WriteFile(s.Path(storetest.Key), nil, 0o600))
	assert.Equal(t, int64(1), hit(t, s, t0).Count)
	assert.Empty(t, logs.String())
}

func TestResetAtTooFarAheadIsClamped(t *testing.T) {
	s, logs := newStore(t, fixedfilestore.Options{})
	// Written by a clock two hours ahead, or by hand.
	future := t0.Add(3 * time.Hour).Unix()
	require.NoError(t, os.WriteFile(s.Path(storetest.Key), fixedfilestore.Encode(nil, ratelab.State{Count: 12, ResetAt: future}), 0o600))

	h := hit(t, s, t0)
	assert.Equal(t, int64(13), h.Count, "the count is kept")
	assert.Equal(t, t0.Add(time.Hour).Unix(), h.ResetAt.Unix(), "the window lasts at most one window from now")
	assert.Contains(t, logs.String(), "clamped")
	assert.Equal(t, int64(1), hit(t, s, t0.Add(time.Hour)).Count, "and it ends there")
}

// Each failure to reach the state is checked under both policies: fail-open
// lets the hit through uncounted and logs, fail-closed refuses and logs.
func checkPolicies(t *testing.T, breakIt func(t *testing.T, s *fixedfilestore.Store), wantCause string) {
	t.Helper()
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		t.Run("fail-"+policy.String(), func(t *testing.T) {
			s, logs := newStore(t, fixedfilestore.Options{FailPolicy: policy, LockWait: 20 * time.Millisecond})
			breakIt(t, s)
			h, err := s.HitAt(storetest.Key, time.Hour, t0)
			if policy == ratelab.FailOpen {
				require.NoError(t, err)
				assert.Equal(t, int64(1), h.Count)
				assert.Equal(t, t0.Add(time.Hour).Unix(), h.ResetAt.Unix())
				require.Error(t, h.NotCounted, "fail-open must say the hit was not counted")
				assert.Contains(t, h.NotCounted.Error(), wantCause)
				assert.Contains(t, logs.String(), "hit not counted (fail-open)")
			} else {
				require.ErrorIs(t, err, ratelab.ErrUnavailable)
				assert.Contains(t, err.Error(), wantCause)
				assert.Contains(t, logs.String(), "hit refused (fail-closed)")
			}
			assert.Contains(t, logs.String(), s.Path(storetest.Key), "the log names the path")
		})
	}
}

func TestSymlinkAtStatePathIsRefused(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o600))
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Symlink(target, s.Path(storetest.Key)))
	}, "symlink")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(got), "the symlink's target was written through")
}

func TestDirectoryAtStatePath(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Mkdir(s.Path(storetest.Key), 0o700))
	}, "directory")
}

func TestBaseDirectoryVanishes(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.RemoveAll(filepath.Dir(s.Dir())))
	}, "no such file or directory")
}

func TestStateDirectoryReplacedByAFile(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.RemoveAll(s.Dir()))
		require.NoError(t, os.WriteFile(s.Dir(), nil, 0o600))
	}, "not a directory")
}

func TestUnwritableStateDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores permission bits; TestStateDirectoryReplacedByAFile covers an unwritable state directory")
	}
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Chmod(s.Dir(), 0o500))
		t.Cleanup(func() { os.Chmod(s.Dir(), 0o700) })
	}, "permission denied")
}

func TestStateDirectoryVanishesAndIsRecreated(t *testing.T) {
	s, logs := newStore(t, fixedfilestore.Options{})
	hit(t, s, t0)
	require.NoError(t, os.RemoveAll(s.Dir()))
	h := hit(t, s, t0)
	assert.NoError(t, h.NotCounted)
	assert.Equal(t, int64(1), h.Count, "the old count went with the directory")
	di, err := os.Stat(s.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	assert.Empty(t, logs.String())
}

func TestLockTimeoutFollowsPolicy(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		holdLock(t, s.Path(storetest.Key))
	}, "timed out waiting for the lock")
}

// holdLock locks path through a descriptor of its own until the test ends,
// as a hung process would.
func holdLock(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	t.Cleanup(func() { f.Close() })
}

func TestLockIsReleasedAfterTimeout(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{LockWait: 10 * time.Millisecond})
	path := s.Path(storetest.Key)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	h := hit(t, s, t0)
	assert.ErrorIs(t, h.NotCounted, fixedfilestore.ErrLockTimeout)
	require.NoError(t, f.Close()) // the holder goes away

	h = hit(t, s, t0)
	assert.NoError(t, h.NotCounted)
	assert.Equal(t, int64(1), h.Count)
}

func TestNewRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(dir, link))
	linkedState := t.TempDir()
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(linkedState, "rate-limits")))

	tests := []struct {
		name string
		base string
		opts fixedfilestore.Options
		want string
	}{
		{"empty base", "", fixedfilestore.Options{}, "base directory is empty"},
		{"missing base", filepath.Join(dir, "nope"), fixedfilestore.Options{}, "does not exist: create it"},
		{"base is a file", file, fixedfilestore.Options{}, "is not a directory"},
		{"base is a symlink", link, fixedfilestore.Options{}, "is a symlink"},
		{"state directory is a symlink", linkedState, fixedfilestore.Options{}, "is a symlink"},
		{"negative lock wait", dir, fixedfilestore.Options{LockWait: -time.Second}, "must not be negative (or WaitForever)"},
		{"unknown policy", dir, fixedfilestore.Options{FailPolicy: 7}, "unknown fail policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fixedfilestore.New(tt.base, tt.opts)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// Separate Store values open separate descriptors, so this exercises the
// flock, not a mutex: 8 goroutines × 200 hits count exactly 1600.
func TestConcurrentInstancesAreExact(t *testing.T) {
	base := t.TempDir()
	var wg sync.WaitGroup
	for range 8 {
		s, _ := newStoreAt(t, base, fixedfilestore.Options{})
		wg.Go(func() {
			for range 200 {
				if h, err := s.HitAt(storetest.Key, time.Hour, t0); err != nil || h.NotCounted != nil {
					t.Errorf("hit: %v %v", err, h.NotCounted)
					return
				}
			}
		})
	}
	wg.Wait()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	assert.Equal(t, int64(1601), hit(t, s, t0).Count)
}

func TestClockOption(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{Clock: func() time.Time { return t0 }})
	h, err := s.Hit(storetest.Key, time.Hour)
	require.NoError(t, err)
	assert.Equal(t, t0.Add(time.Hour).Unix(), h.ResetAt.Unix())
}

func TestSlidingCounterAlgorithm(t *testing.T) {
	base := t.TempDir()
	open := func() *fixedfilestore.Store {
		s, _ := newStoreAt(t, base, fixedfilestore.Options{Algorithm: ratelab.SlidingCounter})
		return s
	}
	// 30 hits near the end of one hour, from several instances (processes).
	for range 30 {
		h, err := open().HitAt(storetest.Key, time.Hour, t0.Add(59*time.Minute))
		require.NoError(t, err)
		require.NoError(t, h.NotCounted)
	}
	s := open()
	assert.True(t, strings.HasSuffix(s.Path(storetest.Key), ".sliding.json"))
	got, err := os.ReadFile(s.Path(storetest.Key))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf(`{"window_start":%d,"count":30,"prev_count":0}`, t0.Unix()), string(got))

	// At the reset the previous hour still weighs in full: no fresh 30.
	h, err := s.HitAt(storetest.Key, time.Hour, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, int64(31), h.Count, "30 × (3600−0)/3600 + 1")
	l, err := ratelab.NewLimiter(s, 30, time.Hour)
	require.NoError(t, err)
	d, err := l.AllowAt(storetest.Key, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, 6*time.Minute, d.ResetIn, "two hits here so far; a third needs 30(3600−e) + 3·3600 ≤ 30·3600: e ≥ 360 s")
}

func TestSlidingCorruptStateIsReplaced(t *testing.T) {
	s, logs := newStore(t, fixedfilestore.Options{Algorithm: ratelab.SlidingCounter})
	require.NoError(t, os.WriteFile(s.Path(storetest.Key), []byte(`{"count":3,"reset_at":1}`), 0o600))
	h := hit(t, s, t0)
	assert.Equal(t, int64(1), h.Count)
	assert.Contains(t, logs.String(), `lacks \"window_start\"`)
	for _, bad := range []string{`{"window_start":1,"count":-1,"prev_count":0}`, `{"window_start":1,"count":1,"prev_count":0} x`} {
		_, err := fixedfilestore.DecodeSliding([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestUnknownAlgorithm(t *testing.T) {
	_, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{Algorithm: "leaky"})
	assert.ErrorContains(t, err, "use fixed or sliding")
}

func TestSweepAndInspectKnowSlidingFiles(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{Algorithm: ratelab.SlidingCounter})
	hit(t, s, t0)
	entries, err := s.Inspect()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.NotNil(t, entries[0].Sliding)
	assert.True(t, entries[0].Live(t0.Add(time.Hour), time.Hour), "its count still weighs in the next window")
	assert.False(t, entries[0].Live(t0.Add(2*time.Hour), time.Hour))
	age(t, s.Path(storetest.Key), t0)
	report, err := s.SweepAt(time.Hour, t0.Add(3*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, fixedfilestore.Removed, report[0].Action)
}

// With a hung holder and more waiters than the store lets block, the extra
// ones poll instead; every one times out and follows the policy, and the
// blocked goroutines finish once the holder goes away.
func TestHungHolderBoundsBlockedWaiters(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{LockWait: 50 * time.Millisecond})
	path := s.Path(storetest.Key)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))

	n := fixedfilestore.MaxBlockedWaiters + 16
	var wg sync.WaitGroup
	notCounted := make([]error, n)
	for i := range n {
		wg.Go(func() {
			h, err := s.HitAt(storetest.Key, time.Hour, t0)
			if err != nil {
				notCounted[i] = err
				return
			}
			notCounted[i] = h.NotCounted
		})
	}
	wg.Wait()
	for i, err := range notCounted {
		require.ErrorIs(t, err, fixedfilestore.ErrLockTimeout, "hit %d", i)
	}
	assert.LessOrEqual(t, fixedfilestore.BlockedWaiters(s), int32(fixedfilestore.MaxBlockedWaiters))

	require.NoError(t, f.Close()) // the holder goes away
	require.Eventually(t, func() bool { return fixedfilestore.BlockedWaiters(s) == 0 }, 5*time.Second, time.Millisecond,
		"abandoned waiters must get the lock, release it and finish")
	h := hit(t, s, t0)
	assert.NoError(t, h.NotCounted)
	assert.Equal(t, int64(1), h.Count, "no abandoned waiter counted a hit")
}
