//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/ratelab/ratelab"
)

// Reset forgets the state of key under r: it takes the file's lock, as a
// hit does (waiting at most Options.LockWait, or until ctx ends), and
// unlinks the file while it holds the lock. A hit that opened the file
// before the unlink gets the lock only afterwards, finds the file has no
// name any more, and starts over on a fresh state: it counts after the
// reset, never in a file nobody reads. A key with no state is not an
// error.
func (s *Store) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	if err := r.Validate(); err != nil {
		return err
	}
	path := s.Path(r, key)
	name := filepath.Base(path)
	fd, err := s.openAt(name, syscall.O_RDWR|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fixedfilestore: reset: %w", err)
	}
	_, err = s.withLock(ctx, fd, path, func() (ratelab.Decision, error) {
		if err := checkHeld(fd, path); err != nil {
			if errors.Is(err, errReplaced) {
				return ratelab.Decision{}, nil // removed meanwhile: nothing left to forget
			}
			return ratelab.Decision{}, err
		}
		if err := s.unlinkAt(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ratelab.Decision{}, err
		}
		return ratelab.Decision{}, nil
	})
	if err != nil {
		return fmt.Errorf("fixedfilestore: reset: %w", err)
	}
	return nil
}
