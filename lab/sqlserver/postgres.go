package sqlserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/ratelab/ratelab/internal/freeport"
)

// PostgresInstallHint is what to run where PostgreSQL's server is missing.
const PostgresInstallHint = "apt-get install postgresql (Debian/Ubuntu) or brew install postgresql (macOS)"

// PostgresAvailable reports whether initdb and postgres are installed.
func PostgresAvailable() bool {
	_, err := postgresBindir()
	return err == nil
}

// postgresBindir finds the server's binaries: on PATH, or where pg_config
// says (Debian keeps them out of PATH, in /usr/lib/postgresql/N/bin).
func postgresBindir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", fmt.Errorf("%w: initdb not found on PATH nor by pg_config --bindir; install it with: %s", ErrNoServer, PostgresInstallHint)
}

// StartPostgres initialises a data directory and starts postgres on a free
// port of 127.0.0.1 (and a socket in its directory), with a superuser
// "ratelab" who logs in with a password (scram-sha-256) and a database
// "ratelab". args are added to postgres's command line.
func StartPostgres(args ...string) (*Server, error) {
	bindir, err := postgresBindir()
	if err != nil {
		return nil, err
	}
	return startIn("postgres", func(s *Server) error { return s.startPostgres(bindir, args) })
}

func (s *Server) startPostgres(bindir string, args []string) error {
	data, logFile, pw := filepath.Join(s.dir, "data"), filepath.Join(s.dir, "log"), filepath.Join(s.dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o600); err != nil {
		return err
	}
	acct, err := dropRoot("postgres", s.dir)
	if err != nil {
		return err
	}
	if err := run(acct, logFile, filepath.Join(bindir, "initdb"), "-D", data, "-U", "ratelab", "--pwfile="+pw,
		"-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd, err := command(acct, logFile, filepath.Join(bindir, "postgres"), append([]string{"-D", data, "-k", s.dir,
		"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-c", "shared_buffers=32MB", "-c", "max_connections=100"}, args...)...)
	if err != nil {
		return err
	}
	if err := s.start(cmd); err != nil {
		return err
	}
	return s.createPostgresDB(logFile)
}

// createPostgresDB waits for the server to take connections, creates the
// database "ratelab" and sets s.DSN to it.
func (s *Server) createPostgresDB(logFile string) error {
	u := url.URL{Scheme: "postgres", User: url.UserPassword("ratelab", Password), Host: s.Addr, Path: "/postgres"}
	admin := u.String()
	ping := func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		return c.Close(ctx)
	}
	if err := s.waitReady(30*time.Second, logFile, ping); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE ratelab"); err != nil {
		return err
	}
	s.newDatabase = func(name string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return "", err
		}
		d := u
		d.Path = "/" + name
		return d.String(), nil
	}
	u.Path = "/ratelab"
	s.DSN = u.String()
	return nil
}

// PostgresForTest starts a private PostgreSQL for t and stops it when t
// ends; without PostgreSQL installed the test is skipped with one line
// saying how to install it.
func PostgresForTest(t TB) *Server {
	t.Helper()
	return forTest(t, func() (*Server, error) { return StartPostgres() })
}
