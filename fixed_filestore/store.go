package fixedfilestore

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// DirName is the directory under the base directory that holds state files.
const DirName = "rate-limits"

// DefaultLockWait is how long a hit waits for a key's lock by default.
const DefaultLockWait = 3 * time.Second

// WaitForever, as Options.LockWait, makes a hit wait for a key's lock with
// a plain blocking flock(2), as the original does, ignoring the context. A
// holder that hangs then hangs every request for its key; it exists to
// measure what the bounded wait costs.
const WaitForever time.Duration = -1

// ErrLockTimeout is the cause reported when a key's lock was not acquired
// within Options.LockWait.
var ErrLockTimeout = errors.New("fixedfilestore: timed out waiting for the lock")

// Options configure a Store. The zero value is the original's behaviour
// with a bounded lock wait added.
type Options struct {
	// LockWait bounds how long a hit waits for a key's lock; 0 means
	// DefaultLockWait. A hit that waited that long is refused as busy
	// (ratelab.ErrBusy), which ratelab.WithFailPolicy refuses under
	// fail-open too, instead of hanging the request: a long queue on a hot
	// key cannot be told from a holder that hangs. WaitForever blocks.
	LockWait time.Duration
	// Logger receives a line for every state file that had to be repaired;
	// nil means slog.Default().
	Logger *slog.Logger
	// Clock is the time source of Take and Sweep; nil means time.Now.
	Clock func() time.Time
}

// Store is a file-backed store for every algorithm of package algorithm. It
// is safe for concurrent use by any number of goroutines and processes on
// one machine: all of them are serialised per state file by flock(2).
// Between hits a Store holds one open descriptor, of its state directory;
// Close releases it.
type Store struct {
	dir      string
	dirMu    sync.RWMutex // guards dirfd against its replacement
	dirfd    int          // the state directory, opened without following links
	lockWait time.Duration
	log      *slog.Logger
	now      func() time.Time
	euid     uint32 // this process's effective user, who owns its state

	// testHookOpened, if set, runs after a hit opened its file and before it
	// locks it: the window in which a sweep may unlink the file.
	testHookOpened func()
}

// New returns a Store keeping state under base/rate-limits. The base
// directory must exist; rate-limits is created 0700 if absent. New refuses a
// base or state directory that is not a directory, a path with a symlink at
// any of its names (the base's parents included: the store opens each name
// without following a link), and, outside Linux, macOS and the BSDs, any
// base at all.
func New(base string, opts Options) (*Store, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if opts.LockWait < 0 && opts.LockWait != WaitForever {
		return nil, fmt.Errorf("fixedfilestore: lock wait %v must not be negative (or WaitForever)", opts.LockWait)
	}
	if base == "" {
		return nil, errors.New("fixedfilestore: base directory is empty: name the directory that holds rate-limits/")
	}
	s := &Store{
		dir:      filepath.Join(filepath.Clean(base), DirName),
		lockWait: cmp.Or(opts.LockWait, DefaultLockWait),
		log:      opts.Logger,
		now:      opts.Clock,
		euid:     uint32(os.Geteuid()),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := s.openStateDir(); err != nil {
		return nil, err
	}
	return s, nil
}

// openStateDir opens the state directory (openStateDirIn), refusing a
// symlink anywhere on its path or another account's directory (owned),
// and makes it 0700 if it is looser.
func (s *Store) openStateDir() error {
	fd, err := openStateDirIn(filepath.Dir(s.dir))
	if err == nil {
		if err = s.judgeDir(fd); err != nil {
			closeFD(fd)
		}
	}
	if err != nil {
		return fmt.Errorf("fixedfilestore: %w", err)
	}
	s.dirfd = fd
	return nil
}

// Close releases the store's descriptor of its state directory. Hits after
// Close are errors wrapping ratelab.ErrUnavailable.
func (s *Store) Close() error { return s.closeDir() }

// Dir returns the directory holding the state files.
func (s *Store) Dir() string { return s.dir }
