//go:build linux || darwin

package fixedfilestore_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/internal/storetest"
)

// age sets path's mtime to at.
func age(t *testing.T, path string, at time.Time) {
	t.Helper()
	require.NoError(t, os.Chtimes(path, at, at))
}

func actions(report []fixedfilestore.SweepEntry) map[string]fixedfilestore.SweepAction {
	m := map[string]fixedfilestore.SweepAction{}
	for _, e := range report {
		m[e.Name] = e.Action
	}
	return m
}

func TestSweepRules(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	now := t0.Add(100 * time.Hour)
	cutoff := now.Add(-2 * time.Hour)
	key := func(k string) string {
		_, err := s.TakeAt(context.Background(), rule, k, t0)
		require.NoError(t, err)
		return fixedfilestore.FileName(rule, k)
	}
	stale, fresh, edge, busy := key("stale"), key("fresh"), key("edge"), key("busy")
	age(t, filepath.Join(s.Dir(), stale), cutoff.Add(-time.Second))
	age(t, filepath.Join(s.Dir(), fresh), now.Add(-time.Hour))
	age(t, filepath.Join(s.Dir(), edge), cutoff) // exactly 2 × window old: not older, kept
	age(t, filepath.Join(s.Dir(), busy), cutoff.Add(-time.Hour))
	holdLock(t, filepath.Join(s.Dir(), busy))

	other := "notes.txt"
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), other), nil, 0o600))
	age(t, filepath.Join(s.Dir(), other), t0)
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, nil, 0o600))
	age(t, victim, t0)
	link := fixedfilestore.FileName(rule, "link")
	require.NoError(t, os.Symlink(victim, filepath.Join(s.Dir(), link)))
	dir := fixedfilestore.FileName(rule, "dir")
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir(), dir), 0o700))
	age(t, filepath.Join(s.Dir(), dir), t0)

	report, err := s.SweepAt(time.Hour, now)
	require.NoError(t, err)
	assert.Equal(t, map[string]fixedfilestore.SweepAction{
		stale: fixedfilestore.Removed,
		fresh: fixedfilestore.Kept,
		edge:  fixedfilestore.Kept,
		busy:  fixedfilestore.Busy,
		other: fixedfilestore.Skipped,
		link:  fixedfilestore.Skipped,
		dir:   fixedfilestore.Skipped,
	}, actions(report))

	for name, exists := range map[string]bool{stale: false, fresh: true, edge: true, busy: true, other: true, link: true, dir: true} {
		_, err := os.Lstat(filepath.Join(s.Dir(), name))
		assert.Equal(t, exists, err == nil, "%s exists", name)
	}
	_, err = os.Stat(victim)
	assert.NoError(t, err, "the symlink's target must survive")
}

func TestSweepRejectsBadWindowAndMissingDirectory(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	_, err := s.SweepAt(0, t0)
	assert.ErrorContains(t, err, "must be positive")
	require.NoError(t, os.RemoveAll(s.Dir()))
	_, err = s.SweepAt(time.Hour, t0)
	assert.ErrorContains(t, err, "no such file or directory")
}

// The race the original accepts and this store closes: a hitter opens a
// stale file, a sweep unlinks it before the hitter gets its lock, and the
// hitter then locks a file that is no longer at the path. Counting into it
// would lose the hit. The choreography below puts the sweep exactly in that
// gap; the hitter must notice, start over, and its hit must be in the file
// that the next hit reads.
func TestSweepCannotLoseAConcurrentHit(t *testing.T) {
	base := t.TempDir()
	sweeper, _ := newStoreAt(t, base, fixedfilestore.Options{})
	hitter, _ := newStoreAt(t, base, fixedfilestore.Options{})
	path := hitter.Path(rule, storetest.Key)

	// A window that ended long ago.
	hit(t, hitter, t0)
	age(t, path, t0)

	opened, proceed := make(chan struct{}), make(chan struct{})
	first := true
	fixedfilestore.SetOpenedHook(hitter, func() {
		if first { // only the first attempt waits
			first = false
			close(opened)
			<-proceed
		}
	})
	now := t0.Add(5 * time.Hour)
	done := make(chan struct{})
	var h1 struct {
		count int64
		err   error
	}
	go func() {
		defer close(done)
		h, err := hitter.TakeAt(context.Background(), rule, storetest.Key, now)
		h1.count, h1.err = count(h), err
		if err == nil {
			h1.err = h.NotCounted
		}
	}()

	<-opened // the hitter holds a descriptor of the stale file, unlocked
	report, err := sweeper.SweepAt(time.Hour, now)
	require.NoError(t, err)
	require.Equal(t, fixedfilestore.Removed, report[0].Action, "the sweep removes the stale file")
	close(proceed)
	<-done

	require.NoError(t, h1.err)
	assert.Equal(t, int64(1), h1.count, "first hit of a new window")
	_, err = os.Stat(path)
	require.NoError(t, err, "the hit must land in a file at the path")
	assert.Equal(t, int64(2), count(hit(t, hitter, now)), "the next hit sees the first: nothing was lost")
}

// A sweep that finds a file locked by a hit leaves it alone, even if the
// file is stale by its mtime.
func TestSweepSkipsAFileBeingHit(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	hit(t, s, t0)
	path := s.Path(rule, storetest.Key)
	age(t, path, t0)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))

	report, err := s.SweepAt(time.Hour, t0.Add(10*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, fixedfilestore.Busy, report[0].Action)
	_, err = os.Stat(path)
	assert.NoError(t, err)
}
