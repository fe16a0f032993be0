// Package logevery keeps a log from growing with the traffic: a message
// is written once, then at most once every interval, with how many times
// it was held back since. A fail policy decides every hit of an outage,
// and a client that sends fast would otherwise choose how much is written.
package logevery

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// maxKeys bounds the messages remembered: past it, all are forgotten,
// and each is written again at its next turn.
const maxKeys = 64

// Log writes records to a slog.Logger, each key at most once every
// interval of the instants its callers give. The zero value is not
// usable; New makes one. A Log is safe for concurrent use.
type Log struct {
	logger *slog.Logger
	every  time.Duration
	mu     sync.Mutex
	last   map[string]time.Time // when each key was last written
	held   map[string]int       // how many times since it was not
}

// New returns a Log writing to logger at most once every every per key.
func New(logger *slog.Logger, every time.Duration) *Log {
	return &Log{logger: logger, every: every, last: map[string]time.Time{}, held: map[string]int{}}
}

// At writes msg and args at level as of now, unless msg was written less
// than the interval before now; the next record written for msg carries
// held_back, the number not written since. An instant before the last
// one written (a clock set back) writes.
func (l *Log) At(now time.Time, level slog.Level, msg string, args ...any) {
	l.KeyAt(now, msg, level, msg, args...)
}

// KeyAt is At for messages that differ in their details, counted as one
// by key: a format, say, whose arguments change.
func (l *Log) KeyAt(now time.Time, key string, level slog.Level, msg string, args ...any) {
	l.mu.Lock()
	last, seen := l.last[key]
	if seen && !now.Before(last) && now.Sub(last) < l.every {
		l.held[key]++
		l.mu.Unlock()
		return
	}
	if !seen && len(l.last) >= maxKeys {
		clear(l.last)
		clear(l.held)
	}
	held := l.held[key]
	l.last[key], l.held[key] = now, 0
	l.mu.Unlock()
	if held > 0 {
		args = append(args, "held_back", held)
	}
	l.logger.Log(context.Background(), level, msg, args...)
}
