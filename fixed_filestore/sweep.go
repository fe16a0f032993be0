package fixedfilestore

import (
	"regexp"
	"time"
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
