package postgresstore

import (
	"errors"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var sslModeKV = regexp.MustCompile(`(?:^|\s)sslmode\s*=`)

// sslModeSet reports whether conn or the environment chooses an sslmode.
func sslModeSet(conn string) bool {
	if os.Getenv("PGSSLMODE") != "" {
		return true
	}
	if strings.Contains(conn, "://") {
		u, err := url.Parse(conn)
		return err != nil || u.Query().Has("sslmode")
	}
	return sslModeKV.MatchString(conn)
}

// local reports whether every host cfg may connect to is this machine: a
// Unix socket, a loopback address or localhost.
func local(cfg *pgx.ConnConfig) bool {
	hosts := []string{cfg.Host}
	for _, f := range cfg.Fallbacks {
		hosts = append(hosts, f.Host)
	}
	for _, h := range hosts {
		if strings.HasPrefix(h, "/") || h == "localhost" {
			continue
		}
		if ip := net.ParseIP(h); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// plain keeps the fallbacks that do not try TLS, less the plain-text twin
// of the first host, which the config itself now is.
func plain(fallbacks []*pgconn.FallbackConfig, first *pgconn.Config) []*pgconn.FallbackConfig {
	var out []*pgconn.FallbackConfig
	for _, f := range fallbacks {
		if f.TLSConfig == nil && (f.Host != first.Host || f.Port != first.Port) {
			out = append(out, f)
		}
	}
	return out
}

// outOfTime reports whether err is the server ending a statement
// (statement_timeout, SQLSTATE 57014) or a lock wait (lock_timeout, 55P03)
// that ran out of time.
func outOfTime(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "57014" || pe.Code == "55P03")
}

// overloaded reports whether err is the server turning a connection away
// for want of a free slot (SQLSTATE 53300, too_many_connections): the
// server is busy, not gone.
func overloaded(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "53300"
}

// refused reports whether err is the server refusing the connection's
// settings: a wrong password or user (SQLSTATE 28P01, 28000), a database
// that does not exist (3D000), a privilege missing (42501), or TLS that
// the URL's sslmode requires and the server does not offer (pgconn says
// "server refused TLS connection", with no type of its own).
func refused(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return slices.Contains([]string{"28P01", "28000", "3D000", "42501"}, pe.Code)
	}
	return err != nil && strings.Contains(err.Error(), "server refused TLS connection")
}
