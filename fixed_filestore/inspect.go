package fixedfilestore

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
)

// Entry is one state file as Inspect sees it.
type Entry struct {
	Name    string
	State   ratelab.State         // a fixed-window state
	Sliding *ratelab.SlidingState // set instead for a sliding-window-counter state
	Err     error                 // why the file could not be read or parsed
}

// Live reports whether a fixed-window entry's window is still open at now,
// or a sliding entry's counts can still weigh on a hit made within window.
func (e Entry) Live(now time.Time, window time.Duration) bool {
	if e.Err != nil {
		return false
	}
	if e.Sliding != nil {
		return e.Sliding.WindowStart+2*int64(window/time.Second) > now.Unix()
	}
	return e.State.ResetAt > now.Unix()
}

// Inspect reads every state file in the store's directory, each under a
// shared lock so that no half-written state is seen. It changes nothing.
// Entries that are not state files are left out.
func (s *Store) Inspect() ([]Entry, error) {
	names, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("fixedfilestore: inspect: %w", err)
	}
	var out []Entry
	for _, d := range names {
		if !stateName.MatchString(d.Name()) {
			continue
		}
		e := Entry{Name: d.Name()}
		b, err := readShared(filepath.Join(s.dir, d.Name()), s.lockWait)
		if err == nil && strings.HasSuffix(d.Name(), ".sliding.json") {
			var st ratelab.SlidingState
			st, err = DecodeSliding(b)
			e.Sliding = &st
		} else if err == nil {
			e.State, err = Decode(b)
		}
		e.Err = err
		out = append(out, e)
	}
	return out, nil
}
