package mysqlstore

import (
	"context"
	"errors"

	"github.com/go-sql-driver/mysql"
)

// Ping asks the server for a sign of life on one of the store's
// connections, an idle one if there is: what package breaker's watcher
// asks, which a busy server answers and a hung one does not. An error the
// server sent is an answer: a server that refuses the credentials or has
// too many connections is alive, and its refusal is the hits' to report —
// not an outage for the breaker to open on; so is TLS it does not offer.
func (s *Store) Ping(ctx context.Context) error {
	err := s.db.PingContext(ctx)
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) || refused(err) {
		return nil
	}
	return err
}
