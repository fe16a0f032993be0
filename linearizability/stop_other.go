//go:build !linux

package linearizability

import (
	"errors"
	"fmt"
	"time"
)

// pause cannot stop a process here: the self-stop it needs (tgkill) is
// Linux's.
func (r *Recorder) pause(int) error {
	return fmt.Errorf("linearizability: a stop token: %w", errors.ErrUnsupported)
}

// Resume has no process to continue where none can stop itself.
func Resume(string, int, time.Duration) func() int { return func() int { return 0 } }
