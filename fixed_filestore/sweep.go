package fixedfilestore

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// SweepAction is what a sweep did with one entry of the state directory.
type SweepAction string

const (
	Removed SweepAction = "removed" // over: unlinked under its lock
	Kept    SweepAction = "kept"    // its state can still weigh on a hit
	Busy    SweepAction = "busy"    // locked by a hitter; left for next time
	Skipped SweepAction = "skipped" // not a state file, not a regular file, or unreadable
)

// SweepEntry reports one entry of the state directory.
type SweepEntry struct {
	Name    string
	Action  SweepAction
	ModTime time.Time
	Reason  string // why it was skipped or kept
}

var stateName = regexp.MustCompile(`^[0-9a-f]{64}(\.sliding|\.log|\.gcra)?\.json$`)

// Sweep is SweepAt(clock()).
func (s *Store) Sweep() ([]SweepEntry, error) { return s.SweepAt(s.now()) }

// SweepAt removes the state files whose state is over at now, judged by
// each file's own state — never by a window the caller passes, so a rule
// with a window of a day is kept as long as its window lives, and a file's
// mtime does not matter. A state is over when nothing in it can weigh on a
// hit stamped up to ratelab.MaxSkew before now (Entry.Live): a fixed
// window that has ended, a sliding counter whose two windows are past, a
// log whose latest instant has left its window, a GCRA state whose
// theoretical arrival time has passed. An empty file is an absent state
// and is removed too.
//
// Unlike the original's cron job it cannot make a concurrent hit lose its
// count. For each candidate it takes the file's lock without waiting (a
// busy file is left for the next sweep), reads and judges the state under
// the lock, and unlinks the file while holding the lock. A hitter that
// opened the file before the unlink gets the lock only afterwards, finds
// the file has no name any more, and starts over on a fresh file.
//
// Entries that are not state files — other names, symlinks, directories,
// FIFOs, hard links, unreadable states — are reported as skipped and left
// alone. The error is about the directory as a whole; problems with single
// files are reported in their entries.
func (s *Store) SweepAt(now time.Time) ([]SweepEntry, error) {
	if err := ratelab.CheckInstant(now); err != nil {
		return nil, fmt.Errorf("fixedfilestore: sweep: %w", err)
	}
	names, err := s.names()
	if err != nil {
		return nil, fmt.Errorf("fixedfilestore: sweep: %w", err)
	}
	slices.Sort(names)
	var report []SweepEntry
	for _, name := range names {
		report = append(report, s.sweepOne(name, now.Add(-ratelab.MaxSkew)))
	}
	return report, nil
}

// !+sweepone

// sweepOne takes the lock of the state file name without waiting and, if
// it gets it, removes the file unless its state is live at at.
func (s *Store) sweepOne(name string, at time.Time) SweepEntry {
	entry := SweepEntry{Name: name, Action: Skipped}
	if !stateName.MatchString(name) {
		entry.Reason = "not a state file name"
		return entry
	}
	st, err := s.lstatFile(name)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	entry.ModTime = st.mtime
	if !st.regular {
		entry.Reason = "not a regular file"
		return entry
	}
	fd, err := s.openFile(name, openLocked)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	defer closeFD(fd)
	switch err := flock(fd, lockExclusive, false); {
	case errors.Is(err, errWouldBlock):
		entry.Action, entry.Reason = Busy, "locked by a hit"
		return entry
	case err != nil:
		entry.Reason = fmt.Sprintf("flock: %v", err)
		return entry
	}
	defer funlock(fd)
	entry.Action, entry.Reason = s.sweepLocked(fd, name, at)
	return entry
}

// sweepLocked judges the state of the locked file name at at and unlinks
// it if it is over.
func (s *Store) sweepLocked(fd int, name string, at time.Time) (SweepAction, string) {
	if err := s.checkHeld(fd, name); err != nil {
		return Skipped, err.Error() // unlinked meanwhile, or a hard link
	}
	buf := make([]byte, maxStateSize(name)+1)
	n, err := preadFull(fd, buf, 0)
	if err != nil {
		return Skipped, err.Error()
	}
	if n > 0 {
		e := decodeEntry(name, buf[:n])
		if e.Err != nil {
			return Skipped, "unreadable state, left for the next hit to replace: " + e.Err.Error()
		}
		if e.Live(at) {
			return Kept, "live: " + e.Describe()
		}
	}
	if err := s.unlinkFile(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Skipped, err.Error()
	}
	return Removed, ""
}

// !-sweepone

// maxStateSize is the largest valid state of the file name, told by the
// algorithm its name's suffix names.
func maxStateSize(name string) int {
	return algorithm.MaxStateSize(ratelab.Rule{Algorithm: algorithmOf(name)})
}
