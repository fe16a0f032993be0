package fixedfilestore

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ratelab/ratelab"
)

// Entry is one state file as Inspect sees it.
type Entry struct {
	Name  string
	State ratelab.State
	Err   error // why the file could not be read or parsed
}

// Live reports whether the entry's window is still open at now.
func (e Entry) Live(now time.Time) bool { return e.Err == nil && e.State.ResetAt > now.Unix() }

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
		if err == nil {
			e.State, err = Decode(b)
		}
		e.Err = err
		out = append(out, e)
	}
	return out, nil
}
