package fixedfilestore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// SweepAction is what a sweep did with one entry of the state directory.
type SweepAction string

const (
	Removed SweepAction = "removed" // stale: unlinked under its lock
	Kept    SweepAction = "kept"    // modified within 2 × window
	Busy    SweepAction = "busy"    // locked by a hitter; left for next time
	Skipped SweepAction = "skipped" // not a state file, or not a regular file
)

// SweepEntry reports one entry of the state directory.
type SweepEntry struct {
	Name    string
	Action  SweepAction
	ModTime time.Time
	Reason  string // why it was skipped or kept
}

var stateName = regexp.MustCompile(`^[0-9a-f]{64}(\.sliding|\.log|\.gcra)?\.json$`)

// Sweep is SweepAt(window, clock()).
func (s *Store) Sweep(window time.Duration) ([]SweepEntry, error) {
	return s.SweepAt(window, s.now())
}

// SweepAt removes the state files whose mtime is before now − 2 × window:
// their window ended at least one whole window ago. Like the original's
// cron job it judges by mtime; unlike it, it cannot make a concurrent hit
// lose its count. For each candidate it takes the file's lock without
// waiting (a busy file is left for the next sweep), checks under the lock
// that the file is still at its path and still stale, and unlinks it while
// holding the lock. A hitter that opened the file before the unlink gets the
// lock only afterwards, sees that its file is no longer at the path, and
// starts over on a fresh file.
//
// Entries that are not state files, or are symlinks or directories, are
// reported as skipped and left alone. The error is about the directory as a
// whole; problems with single files are reported in their entries.
func (s *Store) SweepAt(window time.Duration, now time.Time) ([]SweepEntry, error) {
	if window <= 0 {
		return nil, fmt.Errorf("fixedfilestore: sweep window %v must be positive", window)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("fixedfilestore: sweep: %w", err)
	}
	cutoff := now.Add(-2 * window)
	var report []SweepEntry
	for _, e := range entries {
		report = append(report, s.sweepOne(e.Name(), cutoff))
	}
	return report, nil
}

// !+sweepone
func (s *Store) sweepOne(name string, cutoff time.Time) SweepEntry {
	entry := SweepEntry{Name: name, Action: Skipped}
	if !stateName.MatchString(name) {
		entry.Reason = "not a state file name"
		return entry
	}
	path := filepath.Join(s.dir, name)
	fi, err := os.Lstat(path)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	entry.ModTime = fi.ModTime()
	if !fi.Mode().IsRegular() {
		entry.Reason = "not a regular file (" + fi.Mode().Type().String() + ")"
		return entry
	}
	if !fi.ModTime().Before(cutoff) {
		entry.Action, entry.Reason = Kept, "modified within 2 × window"
		return entry
	}

	f, err := os.OpenFile(path, os.O_RDWR|oNoFollow, 0)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	defer f.Close()
	ok, err := tryLock(int(f.Fd()))
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	if !ok {
		entry.Action, entry.Reason = Busy, "locked by a hit"
		return entry
	}
	defer unlock(int(f.Fd()))
	held, err := f.Stat()
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	entry.ModTime = held.ModTime()
	if cur, err := os.Lstat(path); err != nil || !os.SameFile(held, cur) {
		entry.Reason = "replaced while sweeping"
		return entry
	}
	if !held.ModTime().Before(cutoff) { // a hit landed since the first look
		entry.Action, entry.Reason = Kept, "modified within 2 × window"
		return entry
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		entry.Reason = err.Error()
		return entry
	}
	entry.Action = Removed
	return entry
}

// !-sweepone
