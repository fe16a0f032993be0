package redisstore

import "context"

// Ping sends Redis a PING on one of the client's connections, an idle one
// if there is: what package breaker's watcher asks, which a busy server
// answers and a hung one does not.
func (s *Store) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }
