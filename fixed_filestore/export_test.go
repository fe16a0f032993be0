package fixedfilestore

import (
	"context"
	"time"

	"github.com/ratelab/ratelab"
)

// SetOpenedHook makes every hit of s call f between opening its state file
// and locking it, so tests can orchestrate a sweep into that gap.
func SetOpenedHook(s *Store, f func()) { s.testHookOpened = f }

// SetWrittenHook makes every hit in this process that writes a state
// shorter than the old one call f after the write and before the
// truncate. It is process-wide: only a test's child process sets it.
func SetWrittenHook(f func()) { testHookWritten = f }

// Sleep is sleep, a waiter's sleep between tries, which ends with its
// context.
func Sleep(ctx context.Context, d time.Duration) error { return sleep(ctx, d) }

// PollDelay is pollDelay, a waiter's sleep between tries for the lock.
func PollDelay(last, waited time.Duration) time.Duration { return pollDelay(last, waited) }

// HitFileName is the file name a hit builds for itself, of a checked
// rule.
func HitFileName(r ratelab.Rule, key string) string { return fileName(r, key) }
