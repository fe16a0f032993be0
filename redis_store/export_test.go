package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// LoadScripts loads every script of the store on c, as a server that has
// run each once holds them, so that a test counting a node's commands
// sees no NOSCRIPT attempt.
func LoadScripts(ctx context.Context, c redis.Cmdable) error {
	for _, s := range scripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// PrintfAt is Printf at an instant of the test's.
func (l *GoRedisLog) PrintfAt(now time.Time, format string, v ...any) { l.printfAt(now, format, v...) }
