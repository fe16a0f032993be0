package fixedfilestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/ratelab/ratelab"
)

// Reset forgets the state of key under r: it takes the file's lock, as a
// hit does (waiting at most Options.LockWait, or until ctx ends), and
// unlinks the file while it holds the lock. A hit that opened the file
// before the unlink gets the lock only afterwards, finds the file has no
// name any more, and starts over on a fresh state: it counts after the
// reset, never in a file nobody reads. A key with no state is not an
// error. r is a checked rule (ratelab.Rule.Check).
func (s *Store) Reset(ctx context.Context, r ratelab.Rule, key string) error {
	name := fileName(r, key)
	fd, err := s.openFile(name, openLocked)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fixedfilestore: reset: %w", err)
	}
	err = s.withLock(ctx, fd, name, func() error {
		switch err := s.checkHeld(fd, name); {
		case errors.Is(err, errReplaced):
			return nil // removed meanwhile: nothing left to forget
		case err != nil:
			return err
		}
		if err := s.unlinkFile(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fixedfilestore: reset: %w", err)
	}
	return nil
}
