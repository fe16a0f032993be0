package fixedfilestore

import "github.com/ratelab/ratelab"

// SetOpenedHook makes every hit of s call f between opening its state file
// and locking it, so tests can orchestrate a sweep into that gap.
func SetOpenedHook(s *Store, f func()) { s.testHookOpened = f }

// BlockedWaiters reports how many goroutines of s wait in a blocking flock.
func BlockedWaiters(s *Store) int32 { return s.blockedWaiters.Load() }

// MaxBlockedWaiters is the bound on them.
const MaxBlockedWaiters = maxBlockedWaiters

// FastPath is the path a hit builds for itself.
func FastPath(s *Store, r ratelab.Rule, key string) string { return s.path(r, key) }
