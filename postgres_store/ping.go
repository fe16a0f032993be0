package postgresstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ping asks the server for a sign of life on one of the store's
// connections, an idle one if there is: what package breaker's watcher
// asks, which a busy server answers and a hung one does not. An error the
// server sent is an answer: a server that refuses the credentials or has
// too many connections is alive, and its refusal is the hits' to report —
// not an outage for the breaker to open on; so is TLS it refused.
func (s *Store) Ping(ctx context.Context) error {
	err := s.pool.Ping(ctx)
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) || refused(err) {
		return nil
	}
	return err
}
