package databaselock

import (
	"log/slog"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/redact"
	sqlstore "github.com/ratelab/ratelab/sql_store"
)

// WarnConnections warns on log, once, before the instance cfg describes
// serves, when the client connections open on its database (u, as
// CheckDatabase read them) and all that its processes may open
// (cfg.ConnBudget) are more than the server accepts from ordinary users:
// one line naming the numbers, and what to change. It refuses nothing:
// the connections open may be another instance's, idle for now. Nor can
// it see what is not open yet: an idle instance holds few connections,
// and one started beside it is not warned about, which is why the
// database-lock chapter sizes by the sum of the budgets. If u could not
// say how many are open, it says so instead. It returns whether it
// warned that the connections may run out.
func WarnConnections(log *slog.Logger, cfg httphost.Config, u sqlstore.Usage) bool {
	store := string(cfg.App.Store)
	if u.Unread != nil {
		log.Warn("cannot tell how many connections the database has open, nor whether this instance's budget fits beside them",
			"store", store, "budget", cfg.ConnBudget(sqlstore.DefaultMaxConns), "accepts", u.Accepts(), "err", redact.Err(u.Unread, cfg.App.Server))
		return false
	}
	budget := cfg.ConnBudget(sqlstore.DefaultMaxConns)
	if u.InUse+budget <= u.Accepts() {
		return false
	}
	attrs := []any{"store", store, "open", u.InUse, "budget", budget, "accepts", u.Accepts(), "max_connections", u.Max}
	if u.Reserved > 0 {
		attrs = append(attrs, "reserved", u.Reserved)
	}
	log.Warn("the database may run out of connections: open + budget > accepts; "+remedy(cfg.Model), attrs...)
	return true
}

// remedy is what to change when an instance of model m may run its
// database out of connections.
func remedy(m harness.Model) string {
	switch m {
	case harness.CGI:
		return "lower -cgi-procs, or raise max_connections"
	case harness.Single:
		return "raise max_connections, or close other clients' connections"
	}
	return "lower -workers, or raise max_connections"
}
