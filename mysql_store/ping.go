package mysqlstore

import "context"

// Ping asks the server for a sign of life on one of the store's
// connections, an idle one if there is: what package breaker's watcher
// asks, which a busy server answers and a hung one does not.
func (s *Store) Ping(ctx context.Context) error { return s.db.PingContext(ctx) }
