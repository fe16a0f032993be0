//go:build !linux && !darwin

package fixedfilestore

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/ratelab/ratelab"
)

const oNoFollow = 0

func supported() error {
	return errors.New("fixedfilestore: needs flock(2) semantics (advisory whole-file locks owned by the open file, " +
		"released when the holder dies), available on Linux and macOS, not on " + runtime.GOOS)
}

func (s *Store) update(context.Context, string, ratelab.Rule, time.Time) (ratelab.Decision, error) {
	return ratelab.Decision{}, supported()
}

func tryLock(int) (bool, error) { return false, supported() }

func unlock(int) {}

func readShared(string, time.Duration) ([]byte, error) { return nil, supported() }
