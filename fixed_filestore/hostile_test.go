//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
)

// A hard link from the state path to a file elsewhere is refused like a
// symlink, under both policies, and the file is never written through.
// (Found by trying: ln /outside/file DIR/rate-limits/<name>; ratelab hit
// turned the outside file into {"count":1,…}.)
func TestHardLinkAtStatePathIsRefused(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte("precious"), 0o600))
	checkPolicies(t, func(t *testing.T, s *fixedfilestore.Store) {
		require.NoError(t, os.Link(target, s.Path(rule, storetest.Key)))
	}, "hard links")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "precious", string(got), "the hard link's target was written through")
}

// Inspect does not read through a hard link either: the entry is an
// error, and nothing of the outside file is decoded. (Found by trying:
// ratelab inspect printed an outside file that held a fixed window's
// state, where hit, reset and sweep refused it.)
func TestInspectRefusesAHardLink(t *testing.T) {
	target := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(target, []byte(`{"count":7,"reset_at":1}`), 0o600))
	s, err := fixedfilestore.New(t.TempDir(), fixedfilestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, os.Link(target, s.Path(rule, storetest.Key)))
	entries, err := s.Inspect()
	require.NoError(t, err)
	require.Len(t, entries, 1)
	if e := entries[0]; e.Err == nil || !strings.Contains(e.Err.Error(), "hard links") || e.Fixed.Count != 0 {
		t.Errorf("inspect of a hard link: %+v, want an error saying hard links and no state decoded", e)
	}
}

// The state directory swapped for a symlink to a directory elsewhere while
// hits run — removed and replaced, or renamed away and replaced — never
// sends a write outside: hits go on in the directory the store opened, or
// fail by the policy, and the outside directory stays empty.
func TestStateDirectorySwappedForASymlinkUnderTraffic(t *testing.T) {
	for _, how := range []string{"removed", "renamed"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			outside := t.TempDir()
			s, _ := newGuardedAt(t, base, ratelab.FailOpen, fixedfilestore.Options{})
			state := filepath.Join(base, fixedfilestore.DirName)

			var stop atomic.Bool
			var hits atomic.Int64
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := 0; !stop.Load(); i++ {
						key := storetest.Key + string(rune('a'+g)) + string(rune('a'+i%26))
						d, err := s.TakeAt(context.Background(), rule, key, t0)
						if err != nil {
							t.Errorf("fail-open store returned an error: %v", err)
							return
						}
						if d.Source == ratelab.Shared {
							hits.Add(1)
						}
					}
				})
			}
			require.Eventually(t, func() bool { return hits.Load() > 50 }, 10*time.Second, time.Millisecond)
			// Traffic recreates a removed directory at any moment, so the
			// swap may need a few attempts, as it would an attacker.
			moved := filepath.Join(t.TempDir(), "moved")
			require.NoError(t, retry(func() error {
				if how == "removed" {
					if err := os.RemoveAll(state); err != nil {
						return err
					}
				} else if err := os.Rename(state, moved); err != nil && !os.IsNotExist(err) {
					return err
				}
				return os.Symlink(outside, state)
			}))
			before := hits.Load()
			require.Eventually(t, func() bool { return hits.Load() > before+50 || how == "removed" }, 10*time.Second, time.Millisecond)
			time.Sleep(20 * time.Millisecond) // let traffic meet the symlink: a state, not a clock edge
			stop.Store(true)
			wg.Wait()

			entries, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Empty(t, entries, "a state file was written through the symlinked state directory")
		})
	}
}

// A directory above the base swapped for a symlink after the state
// directory was removed never sends a write outside: the store recreates
// rate-limits only in the real base, opened without following a link
// anywhere in its path, and otherwise fails the hit by its policy. (The
// store used to recreate base/rate-limits by its whole path, through the
// link, and count the hit in the directory it pointed to.)
func TestParentSwappedForASymlinkIsNotFollowed(t *testing.T) {
	root := t.TempDir()
	parent := filepath.Join(root, "app")
	base := filepath.Join(parent, "var")
	require.NoError(t, os.MkdirAll(base, 0o700))
	s, _ := newGuardedAt(t, base, ratelab.FailOpen, fixedfilestore.Options{})
	hit(t, s, t0)

	outside := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(outside, "var"), 0o700))
	require.NoError(t, os.RemoveAll(filepath.Join(base, fixedfilestore.DirName)))
	require.NoError(t, os.Rename(parent, filepath.Join(root, "app.moved")))
	require.NoError(t, os.Symlink(outside, parent))

	d := hit(t, s, t0)
	assert.NotEqual(t, ratelab.Shared, d.Source, "a hit counted through a symlinked parent")
	entries, err := os.ReadDir(filepath.Join(outside, "var"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the state directory was recreated through the symlinked parent")
}

// inspect and sweep never block on a FIFO planted under a state file's
// name (inspect used to open it for reading and hang forever).
func TestFIFOInTheStateDirectoryNeverBlocks(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	storetest.Take(t, s, rule, storetest.Key, t0)
	fifo := filepath.Join(s.Dir(), fixedfilestore.FileName(rule, "fifo"))
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	done := make(chan []fixedfilestore.Entry, 1)
	go func() {
		entries, err := s.Inspect()
		assert.NoError(t, err)
		done <- entries
	}()
	select {
	case entries := <-done:
		require.Len(t, entries, 2)
		var fifoErr error
		for _, e := range entries {
			if e.Name == filepath.Base(fifo) {
				fifoErr = e.Err
			}
		}
		assert.ErrorContains(t, fifoErr, "not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("Inspect blocked on a FIFO")
	}
	report, err := s.SweepAt(t0)
	require.NoError(t, err)
	assert.Equal(t, fixedfilestore.Skipped, actions(report)[filepath.Base(fifo)])
}

// Close releases the directory; later hits follow the fail policy.
func TestCloseReleasesTheDirectory(t *testing.T) {
	s, _ := newGuarded(t, ratelab.FailClosed, fixedfilestore.Options{})
	storetest.Take(t, s, rule, storetest.Key, t0)
	require.NoError(t, s.Close())
	_, err := s.TakeAt(context.Background(), rule, storetest.Key, t0)
	assert.ErrorIs(t, err, ratelab.ErrUnavailable)
}

// The attacker's finding: an existing state directory of mode 0777, or a
// state file chmodded 0666, was used as it was — on a shared host, anyone
// could plant a state or read which keys were hit. The store makes the
// directory 0700 when it opens it and a file 0600 when a hit holds it,
// and says so in a warning.
func TestLooseModesAreTightened(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, fixedfilestore.DirName)
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777)) // past the umask
	var log strings.Builder
	s, err := fixedfilestore.New(base, fixedfilestore.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	mode := func(path string) os.FileMode {
		fi, err := os.Lstat(path)
		require.NoError(t, err)
		return fi.Mode().Perm()
	}
	assert.Equal(t, os.FileMode(0o700), mode(dir), "the state directory")
	assert.Contains(t, log.String(), "was=0777 now=0700")

	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.NoError(t, err)
	path := s.Path(rule, storetest.Key)
	require.Equal(t, os.FileMode(0o600), mode(path), "a state file the store made")
	require.NoError(t, os.Chmod(path, 0o666))
	d, err := s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.NoError(t, err)
	assert.Equal(t, rule.Limit-2, d.Remaining, "counted as ever")
	assert.Equal(t, os.FileMode(0o600), mode(path), "the state file")
	assert.Contains(t, log.String(), "was=0666 now=0600")
}

// The attacker's second finding: a state file or directory another
// account owns was used, and a planted count of 0 reopened a key at its
// limit. A state file of another account is refused under the lock (the
// fail policy decides); another account's state directory is refused
// when this process could write to it — root can write any.
func TestAnotherAccountsStateIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give files to another account")
	}
	const other = 65534 // nobody
	base := t.TempDir()
	s, err := fixedfilestore.New(base, fixedfilestore.Options{})
	require.NoError(t, err)
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.NoError(t, err)
	require.NoError(t, os.Chown(s.Path(rule, storetest.Key), other, other))
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.ErrorIs(t, err, ratelab.ErrUnavailable, "fail-closed")
	assert.Contains(t, err.Error(), "belongs to uid 65534")
	s.Close()

	require.NoError(t, os.Chown(filepath.Join(base, fixedfilestore.DirName), other, other))
	_, err = fixedfilestore.New(base, fixedfilestore.Options{})
	require.Error(t, err, "root over another account's directory")
	assert.Contains(t, err.Error(), "belongs to uid 65534")
}

// The attacker's third finding: the state directory removed while the
// store runs, and made again by another account, 0777, was used as it
// was: hits went on in it, and that account could reset any key. The
// store judges the directory it reopens as it judges the one it opens.
func TestARecreatedStateDirectoryIsJudgedAgain(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give the directory to another account")
	}
	base := t.TempDir()
	s, err := fixedfilestore.New(base, fixedfilestore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.NoError(t, err)
	dir := filepath.Join(base, fixedfilestore.DirName)
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.Mkdir(dir, 0o777))
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	_, err = s.TakeAt(context.Background(), rule, storetest.Key, time.Now())
	require.ErrorIs(t, err, ratelab.ErrUnavailable, "fail-closed")
	assert.Contains(t, err.Error(), "belongs to uid 65534")
	entries, _ := os.ReadDir(dir)
	assert.Empty(t, entries, "nothing written in the other account's directory")
}
