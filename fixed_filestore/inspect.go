package fixedfilestore

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
)

// Entry is one state file as Inspect sees it: its algorithm, told by its
// name's suffix, and the decoded state of that algorithm.
type Entry struct {
	Name      string
	Algorithm ratelab.Algorithm
	Fixed     algorithm.Fixed
	Sliding   algorithm.Sliding
	Log       algorithm.Log
	GCRA      algorithm.GCRAState
	Err       error // why the file could not be read or parsed
}

// algorithmOf tells a state file's algorithm by its name's suffix.
func algorithmOf(name string) ratelab.Algorithm {
	for _, a := range []ratelab.Algorithm{ratelab.SlidingCounter, ratelab.SlidingLog, ratelab.GCRA} {
		if strings.HasSuffix(name, algorithm.Suffix(a)) {
			return a
		}
	}
	return ratelab.FixedWindow
}

// Live reports whether the state can still weigh on a hit at now, judged
// by the state alone: a fixed window that has not ended, a sliding counter
// whose current or previous window is within reach, a log with an instant
// in the last window, a GCRA state whose theoretical arrival time is ahead.
func (e Entry) Live(now time.Time) bool {
	if e.Err != nil {
		return false
	}
	t, ms := now.Unix(), now.UnixMilli()
	switch e.Algorithm {
	case ratelab.SlidingCounter:
		return e.Sliding.WindowStart+2*e.Sliding.Window > t
	case ratelab.SlidingLog:
		n := len(e.Log.TS)
		return n > 0 && e.Log.TS[n-1]+e.Log.Window*1000 >= ms
	case ratelab.GCRA:
		return e.GCRA.TAT > ms
	}
	return e.Fixed.ResetAt > t
}

// Describe shows the state in one line, instants in UTC.
func (e Entry) Describe() string {
	at := func(sec int64) string { return time.Unix(sec, 0).UTC().Format(time.RFC3339) }
	switch e.Algorithm {
	case ratelab.SlidingCounter:
		s := e.Sliding
		return fmt.Sprintf("sliding window=%ds window_start=%d (%s) count=%d prev_count=%d", s.Window, s.WindowStart, at(s.WindowStart), s.Count, s.PrevCount)
	case ratelab.SlidingLog:
		s, last := e.Log, "-"
		if n := len(s.TS); n > 0 {
			last = time.UnixMilli(s.TS[n-1]).UTC().Format(time.RFC3339Nano)
		}
		return fmt.Sprintf("log window=%ds instants=%d latest=%s", s.Window, len(s.TS), last)
	case ratelab.GCRA:
		return fmt.Sprintf("gcra window=%ds tat=%s", e.GCRA.Window, time.UnixMilli(e.GCRA.TAT).UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("count=%d  reset_at=%d (%s)", e.Fixed.Count, e.Fixed.ResetAt, at(e.Fixed.ResetAt))
}

// Inspect reads every state file in the store's directory, each under a
// shared lock so that no half-written state is seen. It changes no state
// file (opening the store, New, makes the directory and tightens its mode).
// Entries that are not state files are left out.
func (s *Store) Inspect() ([]Entry, error) {
	names, err := s.names()
	if err != nil {
		return nil, fmt.Errorf("fixedfilestore: inspect: %w", err)
	}
	slices.Sort(names)
	var out []Entry
	for _, name := range names {
		if !stateName.MatchString(name) {
			continue
		}
		b, err := s.readShared(name)
		e := decodeEntry(name, b)
		if err != nil {
			e.Err = err
		}
		out = append(out, e)
	}
	return out, nil
}

// decodeEntry decodes the state b of the file name by its algorithm.
func decodeEntry(name string, b []byte) Entry {
	e := Entry{Name: name, Algorithm: algorithmOf(name)}
	switch e.Algorithm {
	case ratelab.SlidingCounter:
		e.Sliding, e.Err = algorithm.DecodeSliding(b)
	case ratelab.SlidingLog:
		e.Log, e.Err = algorithm.DecodeLog(b)
	case ratelab.GCRA:
		e.GCRA, e.Err = algorithm.DecodeGCRA(b)
	default:
		e.Fixed, e.Err = algorithm.DecodeFixed(b)
	}
	return e
}

// readShared reads the state file name under a shared lock, so that it
// never sees a write half done, waiting at most Options.LockWait for the
// lock. It opens without blocking (a FIFO planted in the directory cannot
// hang it), and refuses anything but a regular file, a hard link and
// another account's file (foreign) before it reads.
func (s *Store) readShared(name string) ([]byte, error) {
	fd, err := s.openFile(name, openRead)
	if err != nil {
		return nil, err
	}
	defer closeFD(fd)
	st, err := s.fstatRegular(fd, name)
	if err == nil {
		err = s.foreign(st, name)
	}
	if err != nil {
		return nil, err
	}
	if err := lockWithin(context.Background(), fd, lockShared, s.lockWait); err != nil {
		return nil, err
	}
	defer funlock(fd)
	buf := make([]byte, maxStateSize(name)+1)
	n, err := preadFull(fd, buf, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: s.pathOf(name), Err: err}
	}
	return buf[:n], nil
}
