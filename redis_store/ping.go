package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Ping sends Redis a PING on one of the client's connections, an idle one
// if there is: what package breaker's watcher asks, which a busy server
// answers and a hung one does not. An error reply is an answer: a server
// that refuses the password (WRONGPASS, NOAUTH) or the command is alive,
// and its refusal is the hits' to report (ErrRefused), which no policy
// lets through — not an outage for the breaker to open on. So is an
// answer in another protocol than Redis's: the hits report ErrNotRedis.
func (s *Store) Ping(ctx context.Context) error {
	err := s.rdb.Ping(ctx).Err()
	if rerr := redis.Error(nil); errors.As(err, &rerr) || notRedis(err) {
		return nil
	}
	return err
}
