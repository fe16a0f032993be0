//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/ratelab/ratelab"
)

func supported() error {
	return fmt.Errorf("fixedfilestore: needs flock(2) semantics (advisory whole-file locks owned by the open file, "+
		"released when the holder dies), available on Linux, macOS and the BSDs, not on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

func (s *Store) update(context.Context, string, ratelab.Rule, time.Time) (ratelab.Decision, error) {
	return ratelab.Decision{}, supported()
}

func (s *Store) readShared(string, time.Duration) ([]byte, error) { return nil, supported() }

func (s *Store) names() ([]string, error) { return nil, supported() }

func (s *Store) closeDir() error { return nil }

func openDir(string) (int, error) { return -1, supported() }

// SweepAt needs flock(2) semantics.
func (s *Store) SweepAt(time.Time) ([]SweepEntry, error) { return nil, supported() }

// Reset needs flock(2) semantics.
func (s *Store) Reset(context.Context, ratelab.Rule, string) error { return supported() }

// CheckWritable needs flock(2) semantics.
func (s *Store) CheckWritable() error { return supported() }
