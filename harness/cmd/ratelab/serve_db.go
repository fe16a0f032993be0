package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	databaselock "github.com/ratelab/ratelab/database_lock"
	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	sqlstore "github.com/ratelab/ratelab/sql_store"
)

// checkDatabase creates the tables of the database store of cfg and
// shares its connections out among the processes of its model
// (cfg.StoreProcs): a pool's workers (twice as many for two hosts), one
// process for single, and for cgi the programs the front runs at once,
// each of which opens one. It returns how many each process may open, and
// warns on stderr when the connections already open on the server leave
// too few for all of them (databaselock.WarnConnections).
func checkDatabase(cfg httphost.Config, stderr io.Writer) (int, error) {
	app := cfg.App
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	use, err := databaselock.CheckDatabase(ctx, app)
	switch {
	case errors.Is(err, harness.ErrConfig):
		return 0, usagef("-%s: %v", app.Store, strings.TrimPrefix(err.Error(), "harness: configuration error: "))
	case sqlstore.Load(err):
		fmt.Fprintf(stderr, "ratelab serve: warning: the %s database is too busy to answer (%s); until it answers, a hit waits its turn and is refused as busy (503) if its time runs out, or decided in the process under -fail local; once the front's pings go unanswered too, every hit is decided by the fail policy at once\n", app.Store, oneLine(err))
		return 0, nil
	case err != nil:
		fmt.Fprintf(stderr, "ratelab serve: warning: the %s database is unreachable (%s); until it is back every hit fails %s\n", app.Store, oneLine(err), app.FailPolicy)
		return 0, nil
	}
	if cfg.App.Conns, err = shareConns(cfg, use.Usable(), stderr); err != nil {
		return 0, err
	}
	databaselock.WarnConnections(slog.New(slog.NewTextHandler(stderr, nil)), cfg, use)
	return cfg.App.Conns, nil
}

// shareConns returns how many connections each process of cfg may open
// on a server that accepts usable, and says so on stderr; more processes
// than it has connections for is a usage error.
func shareConns(cfg httphost.Config, usable int, stderr io.Writer) (int, error) {
	procs := cfg.StoreProcs()
	conns, err := sqlstore.ConnBudget(usable, procs)
	switch {
	case err != nil && cfg.Model == harness.CGI:
		return 0, usagef("-cgi-procs %d: %v", cfg.CGIProcs, err)
	case err != nil:
		return 0, usagef("-workers %d: %v", cfg.Workers, err)
	case cfg.Model == harness.CGI:
		fmt.Fprintf(stderr, "%s accepts %d connections; under cgi at most %d programs at once, one each\n", cfg.App.Store, usable, procs)
		return 1, nil
	}
	fmt.Fprintf(stderr, "%s accepts %d connections; %d processes × %d each, a quarter kept for other clients\n", cfg.App.Store, usable, procs, conns)
	return conns, nil
}

// oneLine is err's message on one line: pgx gives each host of a
// multi-host URL a line of its own, which would split a warning.
func oneLine(err error) string {
	var b strings.Builder
	for i, line := range strings.Split(err.Error(), "\n") {
		switch {
		case i == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(strings.TrimSpace(line))
	}
	return b.String()
}
