package fixedfilestore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/algorithm"
	brokeninmemory "github.com/ratelab/ratelab/broken_inmemory"
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

// Options configure a Store. The zero value is the original's behaviour:
// fail open, with a bounded lock wait added.
type Options struct {
	// FailPolicy says what a hit does when the state cannot be reached.
	FailPolicy ratelab.FailPolicy
	// LockWait bounds how long a hit waits for a key's lock; 0 means
	// DefaultLockWait. A holder that hangs longer makes the hit follow
	// FailPolicy instead of hanging the request. WaitForever blocks.
	LockWait time.Duration
	// Logger receives a line for every hit that could not be recorded and
	// every state file that had to be repaired; nil means slog.Default().
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
	fail     *ratelab.Failer
	lockWait time.Duration
	log      *slog.Logger
	now      func() time.Time
	rules    algorithm.Rules

	blockedWaiters atomic.Int32 // goroutines waiting in a blocking flock(2)

	// testHookOpened, if set, runs after a hit opened its file and before it
	// locks it: the window in which a sweep may unlink the file.
	testHookOpened func()
}

// New returns a Store keeping state under base/rate-limits. The base
// directory must exist; rate-limits is created 0700 if absent. New refuses a
// base or state directory that is a symlink or not a directory, and, outside
// Linux, macOS and the BSDs, any base at all.
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
	if err := checkDir(base); err != nil {
		return nil, err
	}
	s := &Store{
		dir:      filepath.Join(base, DirName),
		lockWait: cmp.Or(opts.LockWait, DefaultLockWait),
		log:      opts.Logger,
		now:      opts.Clock,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.fail, err = brokeninmemory.NewFailer(opts.FailPolicy, "fixedfilestore", s.log); err != nil {
		return nil, err
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("fixedfilestore: create state directory: %w", err)
	}
	if err := checkDir(s.dir); err != nil {
		return nil, err
	}
	if s.dirfd, err = openDir(s.dir); err != nil {
		return nil, fmt.Errorf("fixedfilestore: %w", err)
	}
	return s, nil
}

// Close releases the store's descriptor of its state directory. Hits after
// Close fail by the fail policy.
func (s *Store) Close() error { return s.closeDir() }

// checkDir reports an error unless path is a real directory.
func checkDir(path string) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("fixedfilestore: directory %s does not exist: create it, or point the store at one that does", path)
	case err != nil:
		return fmt.Errorf("fixedfilestore: %w", err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("fixedfilestore: %s is a symlink: refusing to follow it; use the real directory", path)
	case !fi.IsDir():
		return fmt.Errorf("fixedfilestore: %s is not a directory", path)
	}
	return nil
}

// Dir returns the directory holding the state files.
func (s *Store) Dir() string { return s.dir }

// !+path

// Path returns the file holding the state of key under r: named by the
// digest of the rule's state key (ratelab.KeyDigest of r.StateKey(key)), so
// any key gives a safe, fixed-length name, and suffixed by the algorithm
// (algorithm.Suffix). The fixed window of rule "demo-start" and key
// "ip:203.0.113.7" is where the PHP original keeps key
// "demo-start:ip:203.0.113.7".
func (s *Store) Path(r ratelab.Rule, key string) string {
	return s.dir + string(filepath.Separator) + FileName(r, key)
}

// FileName returns the name of the state file of key under r.
func FileName(r ratelab.Rule, key string) string {
	return ratelab.KeyDigest(r.StateKey(key)) + algorithm.Suffix(r.Normalized().Algorithm)
}

// path is Path, built with one allocation: every hit names its file.
func (s *Store) path(r ratelab.Rule, key string) string {
	var kb [256]byte
	sum := sha256.Sum256(append(append(append(kb[:0], r.Name...), ':'), key...))
	var hb [64]byte
	hex.Encode(hb[:], sum[:])
	var pb [512]byte
	p := append(append(append(append(pb[:0], s.dir...), filepath.Separator), hb[:]...), algorithm.Suffix(r.Algorithm)...)
	return string(p)
}

// !-path

// Take takes one hit now; it is TakeAt(ctx, r, key, clock()).
func (s *Store) Take(ctx context.Context, r ratelab.Rule, key string) (ratelab.Decision, error) {
	return s.TakeAt(ctx, r, key, s.now())
}

// !+takeat

// TakeAt takes one hit of key under r at now, in one locked
// read-modify-write of the state file, and decides it.
//
// When the state cannot be reached, a fail-open store logs the cause and
// allows the hit with NotCounted set; a fail-closed store logs and returns
// an error wrapping ratelab.ErrUnavailable. The lock wait ends at
// Options.LockWait or when ctx ends, whichever is first; if ctx ended, its
// error is returned under every policy; fail-local decides in this process
// alone (ratelab.FailLocal). An invalid rule or instant, and a state of
// another rule with the same name (ratelab.ErrRuleConflict, the file left
// as it was), are errors under every policy.
func (s *Store) TakeAt(ctx context.Context, r ratelab.Rule, key string, now time.Time) (ratelab.Decision, error) {
	r, err := s.rules.Admit(r, now)
	if err != nil {
		return ratelab.Decision{}, err
	}
	path := s.path(r, key)
	d, err := s.update(ctx, path, r, now)
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, ratelab.ErrRuleConflict):
		return ratelab.Decision{}, fmt.Errorf("fixedfilestore: %s: %w", path, err)
	}
	return s.fail.Fail(ctx, slog.String("path", path), r, key, now, err)
}

// !-takeat

// maxBlockedWaiters bounds the goroutines of one Store that wait in a
// blocking flock(2) at once; each holds an OS thread while it waits.
const maxBlockedWaiters = 64

// maxReopen bounds how often one hit starts over because a sweep removed
// the file it had opened. Each start over needs a whole sweep of that file
// in between, so this is never reached in practice.
const maxReopen = 8

var errReplaced = errors.New("fixedfilestore: locked file is no longer at its path")

// step applies one hit of r at now to old, the bytes read from path, and
// returns the result with the new state appended to dst. A corrupt state
// is logged here, so the platform code only moves bytes.
func (s *Store) step(dst, old []byte, path string, r ratelab.Rule, now time.Time) (algorithm.Result, error) {
	res, err := algorithm.Take(dst, old, r, now)
	if err == nil && res.Replaced != nil {
		s.log.Warn("fixedfilestore: corrupt state replaced by a fresh one", "path", path, "err", res.Replaced, "content", quote(old))
	}
	return res, err
}

// quote shows at most 64 bytes of b for a log line.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "…"
	}
	return strconv.Quote(string(b))
}

// maxReadSize is the largest state of any rule: a sliding log at
// ratelab.MaxLogLimit.
const maxReadSize = 64 + 16*ratelab.MaxLogLimit
