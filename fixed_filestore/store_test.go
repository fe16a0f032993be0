//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/syncbuf"
	"github.com/ratelab/ratelab/lab/storetest"
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

// guardedStore is a store behind a fail policy, as an application wires
// it (ratelab.WithFailPolicy), with the store's other methods.
type guardedStore struct {
	*fixedfilestore.Store
	safe ratelab.Store
}

func (g guardedStore) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	return g.safe.TakeAt(ctx, r, key, now)
}

// newGuarded returns a store on a fresh base directory behind policy, and
// their log.
func newGuarded(t *testing.T, policy ratelab.FailPolicy, opts fixedfilestore.Options) (guardedStore, *syncbuf.Buffer) {
	t.Helper()
	return newGuardedAt(t, t.TempDir(), policy, opts)
}

func newGuardedAt(t *testing.T, base string, policy ratelab.FailPolicy, opts fixedfilestore.Options) (guardedStore, *syncbuf.Buffer) {
	t.Helper()
	s, logs := newStoreAt(t, base, opts)
	return guardedStore{s, storetest.WithPolicy(s, policy, slog.New(slog.NewTextHandler(logs, nil)))}, logs
}

// rule is the original's: 30 per hour, fixed window, named demo-start.
var rule = storetest.Original

func hit(t *testing.T, s ratelab.Store, at time.Time) ratelab.Decision {
	t.Helper()
	d, err := s.TakeAt(context.Background(), rule, storetest.Key, at)
	require.NoError(t, err)
	return d
}

// count is the fixed window's count after a hit within the limit.
func count(d ratelab.Decision) int64 { return rule.Limit - d.Remaining }

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() ratelab.Store {
		base := t.TempDir()
		return func() ratelab.Store {
			s, _ := newStoreAt(t, base, fixedfilestore.Options{})
			return s
		}
	}, true)
}

// The original's cross-process test: two instances on one directory share
// the count, as two processes do.
func TestStateSurvivesAcrossInstances(t *testing.T) {
	base := t.TempDir()
	got := storetest.CrossInstance(t, func(t *testing.T) ratelab.Store {
		s, _ := newStoreAt(t, base, fixedfilestore.Options{})
		return s
	})
	assert.Equal(t, int64(28), got)
}

func TestOnDiskFormatMatchesTheOriginal(t *testing.T) {
	base := t.TempDir()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	hit(t, s, t0)
	hit(t, s, t0.Add(time.Second))

	sum := sha256.Sum256([]byte("demo-start:" + storetest.Key)) // the original's key
	path := filepath.Join(base, "rate-limits", hex.EncodeToString(sum[:])+".json")
	assert.Equal(t, path, s.Path(rule, storetest.Key))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	// What PHP's json_encode(['count' => 2, 'reset_at' => 1783558800]) writes.
	assert.Equal(t, `{"count":2,"reset_at":1783558800}`, string(got))

	// A file the PHP original wrote is read as is.
	require.NoError(t, os.WriteFile(path, []byte(`{"count":29,"reset_at":1783558800}`), 0o600))
	assert.Equal(t, int64(30), count(hit(t, s, t0.Add(2*time.Second))))
}

func TestPermissions(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	hit(t, s, t0)
	di, err := os.Stat(s.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm(), "state directory")
	fi, err := os.Stat(s.Path(rule, storetest.Key))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "state file")
}

// contentAttr is how a text log line shows content, as the store logs a
// corrupt state: its first 64 bytes, then "…" if there is more, quoted by
// the handler alone.
func contentAttr(content string) string {
	if len(content) > 64 {
		content = content[:64] + "…"
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key != "content" {
				return slog.Attr{} // only the attribute
			}
			return a
		},
	})).Info("", "content", content)
	return strings.TrimSpace(strings.TrimPrefix(b.String(), "msg= "))
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
				s, logs := newGuarded(t, policy, fixedfilestore.Options{})
				path := s.Path(rule, storetest.Key)
				require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o600))

				h := hit(t, s, t0)
				assert.Equal(t, int64(1), count(h), "policy %v: a fresh window", policy)
				assert.Equal(t, ratelab.Shared, h.Source, "policy %v: the hit is counted in the fresh window", policy)
				assert.Contains(t, logs.String(), "corrupt state replaced", "policy %v", policy)
				assert.Contains(t, logs.String(), tt.wantErr, "policy %v", policy)
				assert.Contains(t, logs.String(), path, "policy %v", policy)
				assert.Contains(t, logs.String(), contentAttr(tt.content), "policy %v: what the file held, quoted once", policy)

				got, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, `{"count":1,"reset_at":1783558800}`, string(got), "policy %v: repaired", policy)
				assert.Equal(t, int64(2), count(hit(t, s, t0)), "policy %v: counting resumes", policy)
			}
		})
	}
}

func TestEmptyFileIsAFreshWindowWithoutComplaint(t *testing.T) {
	s, logs := newStore(t, fixedfilestore.Options{})
	require.NoError(t, os.WriteFile(s.Path(rule, storetest.Key), nil, 0o600))
	assert.Equal(t, int64(1), count(hit(t, s, t0)))
	assert.Empty(t, logs.String())
}

// A window ending further ahead than one window and MaxSkew was written by
// another rule of the same name (or a clock far ahead): the hit is a
// conflict, the file untouched, under either policy.
func TestWindowTooFarAheadIsAConflict(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		s, _ := newGuarded(t, policy, fixedfilestore.Options{})
		future := []byte(fmt.Sprintf(`{"count":12,"reset_at":%d}`, t0.Add(3*time.Hour).Unix()))
		require.NoError(t, os.WriteFile(s.Path(rule, storetest.Key), future, 0o600))
		_, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
		require.ErrorIs(t, err, ratelab.ErrRuleConflict, "policy %v", policy)
		assert.Contains(t, err.Error(), "3h0m0s after this hit")
		got, err := os.ReadFile(s.Path(rule, storetest.Key))
		require.NoError(t, err)
		assert.Equal(t, string(future), string(got), "policy %v: the other rule's state was touched", policy)
	}
}

// Each failure to reach the state is checked under every policy: fail-open
// lets the hit through uncounted and logs, fail-closed refuses and logs,
// fail-local decides in this process and logs.
func checkPolicies(t *testing.T, breakIt func(t *testing.T, s *fixedfilestore.Store), wantCause string) {
	t.Helper()
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
		t.Run("fail-"+policy.String(), func(t *testing.T) {
			s, logs := newGuarded(t, policy, fixedfilestore.Options{LockWait: 20 * time.Millisecond})
			breakIt(t, s.Store)
			h, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
			if policy != ratelab.FailClosed {
				require.NoError(t, err)
				assert.True(t, h.Allowed)
				// Fail-local counts in the process; fail-open claims no state.
				assert.Equal(t, map[ratelab.FailPolicy]int64{ratelab.FailOpen: 0, ratelab.FailLocal: 29}[policy], h.Remaining)
				assert.Equal(t, policy == ratelab.FailOpen, (h.Source == ratelab.Uncounted))
				require.NotEqual(t, ratelab.Shared, h.Source, "fail-%v must say the hit was not counted", policy)
				assert.Contains(t, h.Cause.Error(), wantCause)
				assert.Equal(t, policy == ratelab.FailLocal, (h.Source == ratelab.Local))
				assert.Contains(t, logs.String(), map[ratelab.FailPolicy]string{
					ratelab.FailOpen: "hit not counted (fail-open)", ratelab.FailLocal: "decided by this process alone (fail-local)"}[policy])
			} else {
				require.ErrorIs(t, err, ratelab.ErrUnavailable)
				assert.Contains(t, err.Error(), wantCause)
				assert.Contains(t, logs.String(), "hit refused (fail-closed)")
			}
			assert.Contains(t, logs.String(), s.Path(rule, storetest.Key), "the log names the path")
		})
	}
}

func TestSymlinkAtStatePathIsRefused(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o600))
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Symlink(target, s.Path(rule, storetest.Key)))
	}, "symlink")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(got), "the symlink's target was written through")
}

// A FIFO at a state file's name is neither opened to wait for a writer
// nor counted in: the hit follows the policy at once.
func TestFIFOAtStatePathIsRefused(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, syscall.Mkfifo(s.Path(rule, storetest.Key), 0o600))
	}, "not a regular file")
}

func TestDirectoryAtStatePath(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Mkdir(s.Path(rule, storetest.Key), 0o700))
	}, "directory")
}

func TestBaseDirectoryVanishes(t *testing.T) {
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.RemoveAll(filepath.Dir(s.Dir())))
	}, "does not exist: create it")
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
	assert.Equal(t, ratelab.Shared, h.Source)
	assert.Equal(t, int64(1), count(h), "the old count went with the directory")
	di, err := os.Stat(s.Dir())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	assert.Empty(t, logs.String())
}

// A lock not free within the lock wait is load, not an outage: the hit is
// refused as busy under fail-open as under fail-closed, and decided in the
// process under fail-local.
func TestLockTimeoutIsLoad(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed, ratelab.FailLocal} {
		t.Run("fail-"+policy.String(), func(t *testing.T) {
			s, logs := newGuarded(t, policy, fixedfilestore.Options{LockWait: 20 * time.Millisecond})
			holdLock(t, s.Path(rule, storetest.Key))
			h, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
			if policy == ratelab.FailLocal {
				require.NoError(t, err)
				assert.True(t, (h.Source == ratelab.Local) && h.Allowed, "fail-local decides in the process")
				assert.ErrorIs(t, h.Cause, fixedfilestore.ErrLockTimeout)
			} else {
				assert.ErrorIs(t, err, ratelab.ErrBusy, "fail-%v: a lock not free in time is load", policy)
				assert.ErrorIs(t, err, fixedfilestore.ErrLockTimeout)
				assert.False(t, h.Allowed)
				assert.Contains(t, logs.String(), "the store is busy (load is not an outage)")
			}
			assert.Contains(t, logs.String(), s.Path(rule, storetest.Key), "the log names the path")
		})
	}
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
	path := s.Path(rule, storetest.Key)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, t0)
	assert.ErrorIs(t, err, fixedfilestore.ErrLockTimeout)
	require.NoError(t, f.Close()) // the holder goes away

	h := hit(t, s, t0)
	assert.Equal(t, ratelab.Shared, h.Source)
	assert.Equal(t, int64(1), count(h))
}

func TestNewRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(dir, link))
	linkedState := t.TempDir()
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(linkedState, "rate-limits")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))

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
		{"base is a symlink, named with a trailing slash", link + "/", fixedfilestore.Options{}, "is a symlink"},
		{"base is a symlink, named with a trailing /.", link + "/.", fixedfilestore.Options{}, "is a symlink"},
		{"state directory is a symlink", linkedState, fixedfilestore.Options{}, "is a symlink"},
		{"a directory on the way is a symlink", filepath.Join(link, "sub"), fixedfilestore.Options{}, link + " is a symlink"},
		{"a missing base under a symlink", filepath.Join(link, "nope"), fixedfilestore.Options{}, link + " is a symlink"},
		{"a missing directory on the way", filepath.Join(dir, "nope", "sub"), fixedfilestore.Options{}, filepath.Join(dir, "nope") + " does not exist: create it"},
		{"a file on the way", filepath.Join(file, "sub"), fixedfilestore.Options{}, file + " is not a directory"},
		{"negative lock wait", dir, fixedfilestore.Options{LockWait: -time.Second}, "must not be negative (or WaitForever)"},
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
	rule := rule
	rule.Limit = 1 << 20
	var wg sync.WaitGroup
	for range 8 {
		s, _ := newStoreAt(t, base, fixedfilestore.Options{})
		wg.Go(func() {
			for range 200 {
				if h, err := s.TakeAt(context.Background(), rule, storetest.Key, t0); err != nil || h.Source != ratelab.Shared {
					t.Errorf("hit: %v %v", err, h.Cause)
					return
				}
			}
		})
	}
	wg.Wait()
	s, _ := newStoreAt(t, base, fixedfilestore.Options{})
	d, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
	require.NoError(t, err)
	assert.Equal(t, rule.Limit-1601, d.Remaining, "remaining after 1601 hits")
}

func TestClockOption(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{Clock: func() time.Time { return t0.Add(time.Second) }})
	d, err := s.Take(context.Background(), rule, storetest.Key)
	require.NoError(t, err)
	assert.Equal(t, time.Hour, d.ResetAfter)
}

// Every algorithm has a file of its own, named by suffix, so one rule name
// under two algorithms never meets; each file holds the documented JSON.
func TestEveryAlgorithmHasItsFile(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	want := map[ratelab.Algorithm]string{
		ratelab.FixedWindow:    `{"count":1,"reset_at":1783555260}`,
		ratelab.SlidingCounter: `{"window":60,"window_start":1783555200,"count":1,"prev_count":0}`,
		ratelab.SlidingLog:     `{"window":60,"ts":[1783555200000]}`,
		ratelab.GCRA:           `{"window":60,"tat":1783555220000}`,
	}
	for _, r := range storetest.Rules() {
		r.Name = "same-name"
		storetest.Take(t, s, r, storetest.Key, t0)
		path := s.Path(r, storetest.Key)
		assert.True(t, strings.HasSuffix(path, algorithm.Suffix(r.Algorithm)), path)
		got, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, want[r.Algorithm], string(got), "%s state", r.Algorithm)
	}
}

// A corrupt state of any algorithm is logged and replaced by a fresh one.
func TestCorruptStateOfEveryAlgorithmIsReplaced(t *testing.T) {
	for _, r := range storetest.Rules() {
		s, logs := newStore(t, fixedfilestore.Options{})
		require.NoError(t, os.WriteFile(s.Path(r, storetest.Key), []byte(`{"count":3,"reset_at":1`), 0o600))
		d := storetest.Take(t, s, r, storetest.Key, t0)
		assert.True(t, d.Allowed, "%s", r.Algorithm)
		assert.Contains(t, logs.String(), "corrupt state replaced", "%s", r.Algorithm)
	}
}

// A sliding log filled under a limit that the operator then lowers is
// trimmed to the new limit, not replaced as corrupt: the next hits are
// refused, nothing is logged, and the file is left as it was. The logs of
// limit 100 and 1000 are longer than the store's stack buffer.
func TestLoweredLogLimitKeepsTheLog(t *testing.T) {
	tests := []struct{ before, after int64 }{{40, 5}, {100, 5}, {ratelab.MaxLogLimit, 1}}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d to %d", tt.before, tt.after), func(t *testing.T) {
			base := t.TempDir()
			r := storetest.Checked(ratelab.Rule{Name: "lowered", Limit: tt.before, Window: time.Hour, Algorithm: ratelab.SlidingLog})
			s, _ := newStoreAt(t, base, fixedfilestore.Options{})
			for i := range tt.before {
				d := storetest.Take(t, s, r, storetest.Key, t0.Add(time.Duration(i)*time.Millisecond))
				require.True(t, d.Allowed, "hit %d under limit %d", i+1, tt.before)
			}
			full, err := os.ReadFile(s.Path(r, storetest.Key))
			require.NoError(t, err)

			r.Limit = tt.after // the operator lowers it and restarts
			s, logs := newStoreAt(t, base, fixedfilestore.Options{})
			for i := range 7 {
				d := storetest.Take(t, s, r, storetest.Key, t0.Add(time.Second))
				assert.False(t, d.Allowed, "hit %d under the lowered limit %d", i+1, tt.after)
			}
			assert.NotContains(t, logs.String(), "corrupt")
			got, err := os.ReadFile(s.Path(r, storetest.Key))
			require.NoError(t, err)
			assert.Equal(t, string(full), string(got), "a refused hit writes nothing")
		})
	}
}

func TestSweepAndInspectKnowEveryAlgorithm(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	for _, r := range storetest.Rules() {
		storetest.Take(t, s, r, storetest.Key, t0)
		age(t, s.Path(r, storetest.Key), t0)
	}
	entries, err := s.Inspect()
	require.NoError(t, err)
	require.Len(t, entries, 4)
	for _, e := range entries {
		require.NoError(t, e.Err)
		assert.True(t, e.Live(t0.Add(time.Second)), "%s: live just after its hit", e.Algorithm)
		assert.False(t, e.Live(t0.Add(3*time.Minute)), "%s: nothing left to weigh three windows on", e.Algorithm)
	}
	report, err := s.SweepAt(t0.Add(3 * time.Hour))
	require.NoError(t, err)
	for _, e := range report {
		assert.Equal(t, fixedfilestore.Removed, e.Action, e.Name)
	}
}

// A hit whose context ends while it waits for a held lock returns the
// context's error under either policy, promptly, and counts nothing.
func TestContextEndsTheLockWait(t *testing.T) {
	for _, policy := range []ratelab.FailPolicy{ratelab.FailOpen, ratelab.FailClosed} {
		s, _ := newGuarded(t, policy, fixedfilestore.Options{LockWait: time.Minute})
		holdLock(t, s.Path(rule, storetest.Key))
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := s.TakeAt(ctx, rule, storetest.Key, t0)
			errc <- err
		}()
		cancel()
		select {
		case err := <-errc:
			assert.ErrorIs(t, err, context.Canceled, "policy %v", policy)
			assert.NotErrorIs(t, err, ratelab.ErrUnavailable, "policy %v", policy)
		case <-time.After(10 * time.Second):
			t.Fatalf("policy %v: the hit kept waiting after its context ended", policy)
		}
	}
}

// A waiter's sleep between tries ends when its context does, however long
// it was to be: a sleep of an hour returns the context's error once the
// context is cancelled.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- fixedfilestore.Sleep(ctx, time.Hour) }()
	cancel()
	select {
	case err := <-errc:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(time.Minute):
		t.Fatal("a sleep of an hour outlived its context by a minute")
	}
	assert.NoError(t, fixedfilestore.Sleep(context.Background(), time.Microsecond), "a context that never ends: the sleep ends on time")
}

// With a hung holder and many waiters, every one times out at the lock
// wait and is refused as busy; none is left behind, and none counts a hit
// once the holder goes away.
func TestHungHolderManyWaiters(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{LockWait: 50 * time.Millisecond})
	path := s.Path(rule, storetest.Key)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))

	before := runtime.NumGoroutine()
	const n = 200
	var wg sync.WaitGroup
	notCounted := make([]error, n)
	for i := range n {
		wg.Go(func() {
			h, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
			if err != nil {
				notCounted[i] = err
				return
			}
			notCounted[i] = h.Cause
		})
	}
	wg.Wait()
	for i, err := range notCounted {
		require.ErrorIs(t, err, fixedfilestore.ErrLockTimeout, "hit %d", i)
		require.ErrorIs(t, err, ratelab.ErrBusy, "hit %d: refused under fail-open, not let through", i)
	}
	// A goroutine that has said Done may still be on its way out: wait
	// for the count to come back, as it never would if a waiter that gave
	// up left anything running. (poll.Until checks on this goroutine;
	// assert.Eventually would add one of its own to the count.)
	assert.NoError(t, poll.Until(10*time.Second, time.Millisecond, func() error {
		if n := runtime.NumGoroutine(); n > before {
			return fmt.Errorf("%d goroutines, %d before the waiters", n, before)
		}
		return nil
	}), "a waiter that gave up left nothing running")

	require.NoError(t, f.Close()) // the holder goes away
	h := hit(t, s, t0)
	assert.Equal(t, ratelab.Shared, h.Source)
	assert.Equal(t, int64(1), count(h), "no waiter that gave up counted a hit")
}

// A waiter sleeps 20 µs, then twice as long each time, at most 100 µs
// while its wait is short, and at most an eighth of its wait, up to 10 ms,
// once it is long: a wait of 3 s (the default lock wait) takes a few
// hundred tries, however long each sleep really lasts.
func TestPollDelay(t *testing.T) {
	for _, tt := range []struct {
		last, waited, want time.Duration
	}{
		{0, 0, 20 * time.Microsecond},
		{20 * time.Microsecond, 20 * time.Microsecond, 40 * time.Microsecond},
		{80 * time.Microsecond, time.Millisecond, 125 * time.Microsecond},
		{80 * time.Microsecond, 200 * time.Microsecond, 100 * time.Microsecond},
		{100 * time.Microsecond, 400 * time.Microsecond, 100 * time.Microsecond},
		{time.Millisecond, 40 * time.Millisecond, 2 * time.Millisecond},
		{2 * time.Millisecond, 40 * time.Millisecond, 4 * time.Millisecond},
		{8 * time.Millisecond, 2 * time.Second, 10 * time.Millisecond},
	} {
		got := fixedfilestore.PollDelay(tt.last, tt.waited)
		assert.Equal(t, tt.want, got, "after %v, having waited %v", tt.last, tt.waited)
	}
	tries, last := 0, time.Duration(0)
	for waited := time.Duration(0); waited < fixedfilestore.DefaultLockWait; waited += last {
		last = fixedfilestore.PollDelay(last, waited)
		tries++
	}
	assert.Less(t, tries, 400, "tries in a wait of %v", fixedfilestore.DefaultLockWait)
}

// The name a hit builds in one allocation, of a checked rule, is
// FileName's of the rule as given, for any rule and key; Path is the state
// directory and that name.
func TestHitFileNameIsFileName(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	for _, r := range storetest.Rules() {
		for _, key := range []string{storetest.Key, "", strings.Repeat("k", 1000), "../x"} {
			name := fixedfilestore.FileName(r, key)
			assert.Equal(t, name, fixedfilestore.HitFileName(r.Normalized(), key), "rule %v key %.20q", r, key)
			assert.Equal(t, filepath.Join(s.Dir(), name), s.Path(r, key))
		}
	}
}
