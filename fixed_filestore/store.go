package fixedfilestore

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab"
)

// DirName is the directory under the base directory that holds state files.
const DirName = "rate-limits"

// DefaultLockWait is how long a hit waits for a key's lock by default.
const DefaultLockWait = 3 * time.Second

// WaitForever, as Options.LockWait, makes a hit wait for a key's lock with
// a plain blocking flock(2), as the original does. A holder that hangs then
// hangs every request for its key; it exists to measure what the bounded
// wait costs, and for callers that have a deadline of their own.
const WaitForever time.Duration = -1

// maxStateSize bounds what a state file may hold; the largest valid state,
// {"count":9223372036854775807,"reset_at":9223372036854775807}, is 59 bytes.
const maxStateSize = 512

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
	// Clock is the time source of Hit and Sweep; nil means time.Now.
	Clock func() time.Time
	// Algorithm is the windowing rule: ratelab.FixedWindow (the default,
	// the original's) or ratelab.SlidingCounter, whose state files are named
	// <hex sha256(key)>.sliding.json and hold
	// {"window_start":S,"count":C,"prev_count":P}.
	Algorithm ratelab.Algorithm
}

// Store is a file-backed fixed-window store. It is safe for concurrent use
// by any number of goroutines and processes on one machine: all of them are
// serialised per key by flock(2). A Store holds no open files between hits.
type Store struct {
	dir      string
	policy   ratelab.FailPolicy
	lockWait time.Duration
	log      *slog.Logger
	now      func() time.Time
	algo     ratelab.Algorithm

	blockedWaiters atomic.Int32 // goroutines waiting in a blocking flock(2)

	// testHookOpened, if set, runs after a hit opened its file and before it
	// locks it: the window in which a sweep may unlink the file.
	testHookOpened func()
}

// New returns a Store keeping state under base/rate-limits. The base
// directory must exist; rate-limits is created 0700 if absent. New refuses a
// base or state directory that is a symlink or not a directory, and, outside
// Linux and macOS, any base at all.
func New(base string, opts Options) (*Store, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if opts.LockWait < 0 && opts.LockWait != WaitForever {
		return nil, fmt.Errorf("fixedfilestore: lock wait %v must not be negative (or WaitForever)", opts.LockWait)
	}
	if opts.FailPolicy != ratelab.FailOpen && opts.FailPolicy != ratelab.FailClosed {
		return nil, fmt.Errorf("fixedfilestore: unknown fail policy %v", opts.FailPolicy)
	}
	if base == "" {
		return nil, errors.New("fixedfilestore: base directory is empty: name the directory that holds rate-limits/")
	}
	if opts.Algorithm == "" {
		opts.Algorithm = ratelab.FixedWindow
	}
	if _, err := ratelab.ParseAlgorithm(string(opts.Algorithm)); err != nil {
		return nil, fmt.Errorf("fixedfilestore: %w", err)
	}
	if err := checkDir(base); err != nil {
		return nil, err
	}
	s := &Store{
		dir:      filepath.Join(base, DirName),
		policy:   opts.FailPolicy,
		lockWait: cmp.Or(opts.LockWait, DefaultLockWait),
		log:      opts.Logger,
		now:      opts.Clock,
		algo:     opts.Algorithm,
	}
	if s.log == nil {
		s.log = slog.Default()
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
	return s, nil
}

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
// Path returns the state file of key, named by the key's digest
// (ratelab.KeyDigest), so any key gives a safe, fixed-length name.
func (s *Store) Path(key string) string {
	if s.algo == ratelab.SlidingCounter {
		return s.dir + string(filepath.Separator) + SlidingFileName(key)
	}
	return s.dir + string(filepath.Separator) + FileName(key)
}

// FileName returns the name of key's state file inside the state directory.
func FileName(key string) string { return ratelab.KeyDigest(key) + ".json" }

// !-path

// SlidingFileName returns the name of key's sliding-window-counter state.
func SlidingFileName(key string) string { return ratelab.KeyDigest(key) + ".sliding.json" }

// Hit records one hit for key now; it is HitAt(key, window, clock()).
func (s *Store) Hit(key string, window time.Duration) (ratelab.Hit, error) {
	return s.HitAt(key, window, s.now())
}

// !+hitat
// HitAt records one hit for key at now, in a window of the given length,
// and returns the window after the hit.
//
// When the state cannot be reached, a fail-open store logs the cause and
// returns a fresh window's first hit with NotCounted set; a fail-closed store
// logs and returns an error wrapping ratelab.ErrUnavailable. An invalid
// window is an error under either policy.
func (s *Store) HitAt(key string, window time.Duration, now time.Time) (ratelab.Hit, error) {
	if err := ratelab.CheckWindow(window); err != nil {
		return ratelab.Hit{}, err
	}
	path := s.Path(key)
	h, err := s.update(path, now, window)
	if err == nil {
		return h, nil
	}
	return s.policy.Fail(s.log, "fixedfilestore", slog.String("path", path), now, window, err)
}

// !-hitat

// maxBlockedWaiters bounds the goroutines of one Store that wait in a
// blocking flock(2) at once; each holds an OS thread while it waits.
const maxBlockedWaiters = 64

// maxReopen bounds how often one hit starts over because a sweep removed
// the file it had opened. Each start over needs a whole sweep of that file
// in between, so this is never reached in practice.
const maxReopen = 8

var errReplaced = errors.New("fixedfilestore: locked file is no longer at its path")

// next decodes the state read from path, applies one hit at now and returns
// the Hit to report, and the new state's encoding appended to dst. Corrupt
// state and clamped windows are logged here, so the platform code only
// moves bytes.
func (s *Store) next(dst, old []byte, path string, now time.Time, window time.Duration) (ratelab.Hit, []byte) {
	corrupt := func(err error) {
		s.log.Warn("fixedfilestore: corrupt state replaced by a fresh window", "path", path, "err", err, "content", quote(old))
	}
	if s.algo == ratelab.SlidingCounter {
		prev, err := DecodeSliding(old)
		if err != nil {
			corrupt(err)
		}
		st := prev.Next(now, window)
		return st.Hit(now, window), EncodeSliding(dst, st)
	}
	prev, err := Decode(old)
	if err != nil {
		corrupt(err)
	}
	st, clamped := prev.Next(now, window)
	if clamped {
		s.log.Warn("fixedfilestore: reset_at was more than one window ahead (clock stepped back or file edited); window clamped",
			"path", path, "reset_at", prev.ResetAt, "now", now.Unix(), "clamped_to", st.ResetAt)
	}
	return st.Hit(), Encode(dst, st)
}

// Encode appends the JSON form of st to dst, byte for byte as PHP's
// json_encode(['count' => N, 'reset_at' => T]) writes it.
func Encode(dst []byte, st ratelab.State) []byte {
	dst = append(dst, `{"count":`...)
	dst = strconv.AppendInt(dst, st.Count, 10)
	dst = append(dst, `,"reset_at":`...)
	dst = strconv.AppendInt(dst, st.ResetAt, 10)
	return append(dst, '}')
}

// Decode parses a state file. Empty content is the absent state (a file
// just created). Anything else must be one JSON object with an integer count
// of at least zero and a positive integer reset_at; anything else is an
// error that says what is wrong.
func Decode(b []byte) (ratelab.State, error) {
	if len(b) == 0 {
		return ratelab.State{}, nil
	}
	if st, ok := decodeCanonical(b); ok {
		return st, nil
	}
	return decodeJSON(b)
}

func decodeJSON(b []byte) (ratelab.State, error) {
	var raw struct {
		Count   *int64 `json:"count"`
		ResetAt *int64 `json:"reset_at"`
	}
	if err := decodeObject(b, &raw); err != nil {
		return ratelab.State{}, err
	}
	switch {
	case raw.Count == nil || raw.ResetAt == nil:
		return ratelab.State{}, errors.New(`fixedfilestore: state lacks "count" or "reset_at"`)
	case *raw.Count < 0:
		return ratelab.State{}, fmt.Errorf("fixedfilestore: state count %d is negative", *raw.Count)
	case *raw.ResetAt <= 0:
		return ratelab.State{}, fmt.Errorf("fixedfilestore: state reset_at %d is not a Unix time", *raw.ResetAt)
	}
	return ratelab.State{Count: *raw.Count, ResetAt: *raw.ResetAt}, nil
}

// decodeObject decodes exactly one JSON object of at most maxStateSize
// bytes into v, saying what is wrong otherwise.
func decodeObject(b []byte, v any) error {
	if len(b) > maxStateSize {
		return fmt.Errorf("fixedfilestore: state is larger than %d bytes", maxStateSize)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("fixedfilestore: state is not valid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("fixedfilestore: state has data after its JSON object")
	}
	return nil
}

// decodeCanonical reads exactly what Encode (and PHP's json_encode)
// writes, {"count":N,"reset_at":M} with N ≥ 0 and M > 0, without
// reflection: the state of every hit is read, so this is the hot path.
// Anything else is left to the full decoder in Decode.
func decodeCanonical(b []byte) (ratelab.State, bool) {
	rest, ok := bytes.CutPrefix(b, []byte(`{"count":`))
	if !ok {
		return ratelab.State{}, false
	}
	i := bytes.IndexByte(rest, ',')
	if i < 0 {
		return ratelab.State{}, false
	}
	count, err := strconv.ParseInt(string(rest[:i]), 10, 64)
	if err != nil || count < 0 || rest[0] == '+' || (rest[0] == '0' && i > 1) {
		return ratelab.State{}, false
	}
	rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"reset_at":`))
	if !ok || len(rest) < 2 || rest[len(rest)-1] != '}' {
		return ratelab.State{}, false
	}
	num := rest[:len(rest)-1]
	resetAt, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || resetAt <= 0 || num[0] == '+' || num[0] == '0' {
		return ratelab.State{}, false
	}
	return ratelab.State{Count: count, ResetAt: resetAt}, true
}

// quote shows at most 64 bytes of b for a log line.
func quote(b []byte) string {
	if len(b) > 64 {
		return strconv.Quote(string(b[:64])) + "…"
	}
	return strconv.Quote(string(b))
}

// EncodeSliding appends the JSON form of a sliding-window-counter state.
func EncodeSliding(dst []byte, st ratelab.SlidingState) []byte {
	dst = append(dst, `{"window_start":`...)
	dst = strconv.AppendInt(dst, st.WindowStart, 10)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, st.Count, 10)
	dst = append(dst, `,"prev_count":`...)
	dst = strconv.AppendInt(dst, st.PrevCount, 10)
	return append(dst, '}')
}

// DecodeSliding parses a sliding-window-counter state file, as strictly as
// Decode parses a fixed-window one.
func DecodeSliding(b []byte) (ratelab.SlidingState, error) {
	if len(b) == 0 {
		return ratelab.SlidingState{}, nil
	}
	var raw struct {
		WindowStart *int64 `json:"window_start"`
		Count       *int64 `json:"count"`
		PrevCount   *int64 `json:"prev_count"`
	}
	if err := decodeObject(b, &raw); err != nil {
		return ratelab.SlidingState{}, err
	}
	switch {
	case raw.WindowStart == nil || raw.Count == nil || raw.PrevCount == nil:
		return ratelab.SlidingState{}, errors.New(`fixedfilestore: state lacks "window_start", "count" or "prev_count"`)
	case *raw.Count < 0 || *raw.PrevCount < 0:
		return ratelab.SlidingState{}, errors.New("fixedfilestore: state has a negative count")
	}
	return ratelab.SlidingState{WindowStart: *raw.WindowStart, Count: *raw.Count, PrevCount: *raw.PrevCount}, nil
}
