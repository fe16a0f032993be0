//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package racetests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ratelab/ratelab/algorithm"
)

// The finding: `ratelab race` failed ("state has data after its JSON
// object") when the truncate-first writers of its lock-free stress run
// left the state torn — a shorter object written over a longer one's
// tail, as two writers without a lock do. The final count is read as
// the hitters read a state: unreadable is a new window, 0, and said so.
func TestFinalCountOfATornState(t *testing.T) {
	long := algorithm.Fixed{Count: 12345, ResetAt: 1_780_003_600}.Append(nil)
	short := algorithm.Fixed{Count: 9, ResetAt: 1_780_003_600}.Append(nil)
	for _, tt := range []struct {
		name  string
		state []byte
		count int64
		torn  bool
	}{
		{"whole", long, 12345, false},
		{"a shorter object over a longer one's tail", append(short, long[len(short):]...), 0, true},
		{"empty: no state yet", nil, 0, false},
	} {
		path := filepath.Join(t.TempDir(), "state.json")
		if err := os.WriteFile(path, tt.state, 0o600); err != nil {
			t.Fatal(err)
		}
		n, torn, err := finalCount(path)
		if err != nil || n != tt.count || torn != tt.torn {
			t.Errorf("%s: finalCount = %d, torn %v, %v; want %d, torn %v", tt.name, n, torn, err, tt.count, tt.torn)
		}
	}
}
