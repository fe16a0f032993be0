//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

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

	"github.com/ratelab/ratelab"
	fixedfilestore "github.com/ratelab/ratelab/fixed_filestore"
	"github.com/ratelab/ratelab/lab/storetest"
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
	take := func(r ratelab.Rule, k string, at time.Time) string {
		storetest.Take(t, s, r, k, at)
		return fixedfilestore.FileName(r, k)
	}
	day := storetest.Checked(ratelab.Rule{Name: "daily", Limit: 5, Window: 24 * time.Hour})
	over := take(rule, "over", t0)                                         // ended 99 h ago
	live := take(rule, "live", now.Add(-30*time.Minute))                   // ends in 30 min
	justOver := take(rule, "just-over", now.Add(-time.Hour))               // ended now: a hit stamped up to MaxSkew late could still count in it
	longLive := take(day, "day", now.Add(-20*time.Hour))                   // a window of a day, 20 h in, mtime aged by hand
	logLive := take(storetest.Rules()[2], "log", now.Add(-30*time.Second)) // its instant is still in its minute
	busy := take(rule, "busy", t0)
	age(t, filepath.Join(s.Dir(), longLive), t0)
	holdLock(t, filepath.Join(s.Dir(), busy))
	empty := fixedfilestore.FileName(rule, "empty")
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), empty), nil, 0o600))
	garbage := fixedfilestore.FileName(rule, "garbage")
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), garbage), []byte("{not json"), 0o600))

	other := "notes.txt"
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir(), other), nil, 0o600))
	victim := filepath.Join(t.TempDir(), "victim")
	require.NoError(t, os.WriteFile(victim, []byte(`{"count":1,"reset_at":1}`), 0o600))
	link := fixedfilestore.FileName(rule, "link")
	require.NoError(t, os.Symlink(victim, filepath.Join(s.Dir(), link)))
	hard := fixedfilestore.FileName(rule, "hard")
	require.NoError(t, os.Link(victim, filepath.Join(s.Dir(), hard)))
	dir := fixedfilestore.FileName(rule, "dir")
	require.NoError(t, os.Mkdir(filepath.Join(s.Dir(), dir), 0o700))
	fifo := fixedfilestore.FileName(rule, "fifo")
	require.NoError(t, syscall.Mkfifo(filepath.Join(s.Dir(), fifo), 0o600))

	report, err := s.SweepAt(now)
	require.NoError(t, err)
	assert.Equal(t, map[string]fixedfilestore.SweepAction{
		over:     fixedfilestore.Removed,
		live:     fixedfilestore.Kept,
		justOver: fixedfilestore.Kept,
		longLive: fixedfilestore.Kept,
		logLive:  fixedfilestore.Kept,
		busy:     fixedfilestore.Busy,
		empty:    fixedfilestore.Removed,
		garbage:  fixedfilestore.Skipped,
		other:    fixedfilestore.Skipped,
		link:     fixedfilestore.Skipped,
		hard:     fixedfilestore.Skipped,
		dir:      fixedfilestore.Skipped,
		fifo:     fixedfilestore.Skipped,
	}, actions(report))

	for name, exists := range map[string]bool{over: false, live: true, longLive: true, busy: true, empty: false, other: true, link: true, hard: true, dir: true, fifo: true} {
		_, err := os.Lstat(filepath.Join(s.Dir(), name))
		assert.Equal(t, exists, err == nil, "%s exists", name)
	}
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, `{"count":1,"reset_at":1}`, string(got), "the links' target must survive untouched")

	// A minute later the just-ended window is over too.
	report, err = s.SweepAt(now.Add(ratelab.MaxSkew))
	require.NoError(t, err)
	assert.Equal(t, fixedfilestore.Removed, actions(report)[justOver])
}

// The finding: five hits of a 24 h rule, the file's mtime set three hours
// back, and a sweep by the original's mtime rule removed it and let the
// throttled key through. The sweep now reads the state.
func TestSweepKeepsALongWindowWhateverItsMtime(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	day := storetest.Checked(ratelab.Rule{Name: "daily", Limit: 5, Window: 24 * time.Hour})
	for range 5 {
		storetest.Take(t, s, day, storetest.Key, t0)
	}
	age(t, s.Path(day, storetest.Key), t0.Add(-3*time.Hour))
	_, err := s.SweepAt(t0.Add(3 * time.Hour))
	require.NoError(t, err)
	assert.False(t, storetest.Take(t, s, day, storetest.Key, t0.Add(3*time.Hour)).Allowed, "still throttled after the sweep")
}

func TestSweepRejectsBadInstantAndMissingDirectory(t *testing.T) {
	s, _ := newStore(t, fixedfilestore.Options{})
	_, err := s.SweepAt(time.Unix(-5, 0))
	assert.ErrorContains(t, err, "outside 1970-01-01")
	require.NoError(t, os.RemoveAll(s.Dir()))
	_, err = s.SweepAt(t0)
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
			h1.err = h.Cause
		}
	}()

	<-opened // the hitter holds a descriptor of the stale file, unlocked
	report, err := sweeper.SweepAt(now)
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

	report, err := s.SweepAt(t0.Add(10 * time.Hour))
	require.NoError(t, err)
	assert.Equal(t, fixedfilestore.Busy, report[0].Action)
	_, err = os.Stat(path)
	assert.NoError(t, err)
}

// A reset that runs while a hit waits between opening the file and
// locking it: the hit must notice the file is gone and count in the fresh
// state, the one every later hit reads.
func TestResetCannotLoseAConcurrentHit(t *testing.T) {
	base := t.TempDir()
	resetter, _ := newStoreAt(t, base, fixedfilestore.Options{})
	hitter, _ := newStoreAt(t, base, fixedfilestore.Options{})
	for range 5 {
		hit(t, hitter, t0)
	}
	opened, proceed := make(chan struct{}), make(chan struct{})
	first := true
	fixedfilestore.SetOpenedHook(hitter, func() {
		if first {
			first = false
			close(opened)
			<-proceed
		}
	})
	done := make(chan ratelab.Decision)
	go func() { done <- hit(t, hitter, t0) }()
	<-opened // the hitter holds a descriptor of the old state, unlocked
	require.NoError(t, resetter.Reset(context.Background(), rule, storetest.Key))
	close(proceed)
	assert.Equal(t, int64(1), count(<-done), "the waiting hit is the first of the fresh state")
	assert.Equal(t, int64(2), count(hit(t, hitter, t0)), "and the next hit sees it: nothing lost")
}
