package fixedfilestore

import "github.com/ratelab/ratelab"

// SetOpenedHook makes every hit of s call f between opening its state file
// and locking it, so tests can orchestrate a sweep into that gap.
func SetOpenedHook(s *Store, f func()) { s.testHookOpened = f }

// SetWrittenHook makes every hit in this process that writes a state
// shorter than the old one call f after the write and before the
// truncate. It is process-wide: only a test's child process sets it.
func SetWrittenHook(f func()) { testHookWritten = f }

// BlockedWaiters reports how many goroutines of s wait in a blocking flock.
func BlockedWaiters(s *Store) int32 { return s.blockedWaiters.Load() }

// MaxBlockedWaiters is the bound on them.
const MaxBlockedWaiters = maxBlockedWaiters

// HitFileName is the file name a hit builds for itself, of a rule that
// Admit returned.
func HitFileName(r ratelab.Rule, key string) string { return fileName(r, key) }
