//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
)

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
func (s *Store) sweepOne(name string, at time.Time) SweepEntry {
	entry := SweepEntry{Name: name, Action: Skipped}
	if !stateName.MatchString(name) {
		entry.Reason = "not a state file name"
		return entry
	}
	st, err := s.lstatAt(name)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	entry.ModTime = time.Unix(st.Mtim.Unix())
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		entry.Reason = "not a regular file"
		return entry
	}
	fd, err := s.openAt(name, syscall.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	defer syscall.Close(fd)
	ok, err := tryLock(fd)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	if !ok {
		entry.Action, entry.Reason = Busy, "locked by a hit"
		return entry
	}
	defer unlock(fd)
	if err := checkHeld(fd, name); err != nil {
		entry.Reason = err.Error() // unlinked meanwhile, or a hard link
		return entry
	}
	buf := make([]byte, maxReadSize+1)
	n, err := pread(fd, buf)
	if err != nil {
		entry.Reason = err.Error()
		return entry
	}
	if n > 0 {
		e := decodeEntry(name, buf[:n])
		if e.Err != nil {
			entry.Reason = "unreadable state, left for the next hit to replace: " + e.Err.Error()
			return entry
		}
		if e.Live(at) {
			entry.Action, entry.Reason = Kept, "live: "+e.Describe()
			return entry
		}
	}
	if err := s.unlinkAt(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		entry.Reason = err.Error()
		return entry
	}
	entry.Action = Removed
	return entry
}

// !-sweepone
