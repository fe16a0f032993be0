package main

import (
	"context"
	"fmt"

	beyondonehost "github.com/ratelab/ratelab/beyond_one_host"
	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/lab/redisserver"
	"github.com/ratelab/ratelab/lab/sqlserver"
)

// privateServers are the private servers of one ratelab check, one of a
// kind, started at the first history that needs one and stopped when the
// check ends: every history still starts from no state — a Redis flushed,
// tables under a prefix of their own — without a server started for each
// (a MariaDB or a PostgreSQL takes seconds to start).
type privateServers struct {
	redis   *redisserver.Server
	sql     map[harness.StoreKind]*sqlserver.Server
	stops   []func()
	history int // histories so far: each database history's table prefix
}

// stop stops every server started.
func (p *privateServers) stop() {
	for _, stop := range p.stops {
		stop()
	}
}

// point points app at the private server its store needs, in a state of
// its own, starting the server if it is the first of its kind.
func (p *privateServers) point(app *harness.App) error {
	p.history++
	switch app.Store {
	case beyondonehost.Redis:
		if p.redis == nil {
			srv, err := redisserver.Start()
			if err != nil {
				return err
			}
			p.redis, p.stops = srv, append(p.stops, srv.Stop)
		}
		c := p.redis.Client()
		defer c.Close()
		app.Server = p.redis.URL()
		return c.FlushAll(context.Background()).Err()
	case databaselock.MySQL, databaselock.Postgres:
		srv := p.sql[app.Store]
		if srv == nil {
			start := map[harness.StoreKind]func(...string) (*sqlserver.Server, error){
				databaselock.MySQL: sqlserver.StartMariaDB, databaselock.Postgres: sqlserver.StartPostgres}[app.Store]
			var err error
			if srv, err = start(); err != nil {
				return err
			}
			if p.sql == nil {
				p.sql = map[harness.StoreKind]*sqlserver.Server{}
			}
			p.sql[app.Store], p.stops = srv, append(p.stops, srv.Stop)
		}
		app.Server, app.Prefix = srv.DSN, fmt.Sprintf("check%d_", p.history)
		_, err := databaselock.CheckDatabase(context.Background(), *app) // creates the tables
		return err
	}
	return nil
}
