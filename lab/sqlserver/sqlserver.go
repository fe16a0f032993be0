// Package sqlserver starts private MariaDB and PostgreSQL servers for tests
// and demonstrations: a data directory of their own under the system's
// temporary directory, a free port on 127.0.0.1, a database "ratelab" and
// a user with a password, stopped and removed when done.
//
// Neither server runs as root (PostgreSQL refuses to; MariaDB is told not
// to): run by root, a server drops to its own system user — "mysql" or
// "postgres", created by the OS packages — which is given its directory.
package sqlserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/procstop"
	"github.com/ratelab/ratelab/internal/shortmode"
)

// Server is a running private database server.
type Server struct {
	Addr string // 127.0.0.1:port
	// DSN connects to the database "ratelab" as the user "ratelab": a
	// go-sql-driver/mysql DSN for MariaDB, a postgres:// URL for PostgreSQL.
	DSN  string
	cmd  *exec.Cmd
	dir  string
	exit chan error
	// newDatabase creates a database and returns its DSN.
	newDatabase func(name string) (string, error)
}

// Database creates the database name (lower-case letters, digits and
// underscores) on s and returns a DSN of it, for the user "ratelab".
func (s *Server) Database(name string) (string, error) { return s.newDatabase(name) }

// Password is the password of the user "ratelab" on every private server.
const Password = "ratelab-test"

// Stop ends the server (SIGTERM, then SIGKILL after 10 s), waits for it
// and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.wake()
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exit:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exit
		}
	}
	os.RemoveAll(s.dir)
}

// start runs the server's command, remembering its exit.
func (s *Server) start(cmd *exec.Cmd) error {
	s.cmd = cmd
	if err := cmd.Start(); err != nil {
		return err
	}
	s.exit = make(chan error, 1)
	go func() { s.exit <- cmd.Wait() }()
	return nil
}

// waitReady calls ping until it succeeds, the server exits or limit passes.
func (s *Server) waitReady(limit time.Duration, logFile string, ping func(context.Context) error) error {
	err := poll.Until(limit, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := ping(ctx)
		select {
		case exitErr := <-s.exit:
			s.exit <- exitErr
			return poll.Stop(fmt.Errorf("server exited (%v)", exitErr))
		default:
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("not ready: %w; log:%s", err, logOf(logFile))
	}
	return nil
}

// logOf returns a log file whole, for an error: the cause of a failed
// start is often far from the end.
func logOf(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return "\n" + string(b)
}

// startIn makes a fresh directory named for kind and starts a server in it
// with start; a start that fails is tried once more in another fresh
// directory, on another port — a busy machine can fail one (an install
// script timing out, a port taken between choosing and binding). Both
// failures are reported, each with its whole log.
func startIn(kind string, start func(s *Server) error) (*Server, error) {
	var errs []error
	for try := 1; try <= 2; try++ {
		dir, err := os.MkdirTemp("", "sqlserver-"+kind+"-")
		if err != nil {
			return nil, err
		}
		s := &Server{dir: dir}
		err = start(s)
		if err == nil {
			return s, nil
		}
		s.Stop()
		errs = append(errs, fmt.Errorf("sqlserver: %s, try %d: %w", kind, try, err))
	}
	return nil, errors.Join(errs...)
}

// account is the system user a server runs as: nil when this process is
// not root (the server runs as this process's user).
type account struct{ uid, gid uint32 }

// dropRoot returns the account of the system user name when running as
// root, after giving it dir; nil otherwise.
func dropRoot(name, dir string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("running as root, the server must drop to its system user %q: %w", name, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	a := &account{uint32(uid), uint32(gid)}
	err = filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(a.uid), int(a.gid))
	})
	return a, err
}

// command is exec.Command running as a (if not nil), with stdout and
// stderr appended to logFile.
func command(a *account, logFile string, path string, args ...string) (*exec.Cmd, error) {
	log, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if a != nil {
		runAs(cmd, a)
		if err := os.Lchown(logFile, int(a.uid), int(a.gid)); err != nil {
			return nil, err
		}
	}
	procstop.DieWithParent(cmd)
	return cmd, nil
}

// run runs a set-up command to its end, quoting its log on failure.
func run(a *account, logFile, path string, args ...string) error {
	cmd, err := command(a, logFile, path, args...)
	if err != nil {
		return err
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w; log:%s", filepath.Base(path), err, logOf(logFile))
	}
	return nil
}

// TB is the part of testing.TB that ForTest uses; the package does not
// import testing, so that the ratelab command, which starts servers for
// its demonstrations, does not link it.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
	Cleanup(func())
}

// ErrNoServer is wrapped when a server's binaries are not installed; its
// message says what to install.
var ErrNoServer = errors.New("sqlserver: database server not installed")

// forTest starts a server with start for t and stops it when t ends;
// without the server's binaries the test is skipped with one line saying
// how to install them.
func forTest(t TB, start func() (*Server, error)) *Server {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("database server"))
	}
	s, err := start()
	if errors.Is(err, ErrNoServer) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// ForTest starts a server with start and args for t, and stops it when t
// ends, as MariaDBForTest and PostgresForTest do without args: for a test
// that needs a setting of its own (a small max_connections). Without the
// server's binaries the test is skipped with one line saying how to
// install them.
func ForTest(t TB, start func(args ...string) (*Server, error), args ...string) *Server {
	t.Helper()
	return forTest(t, func() (*Server, error) { return start(args...) })
}

// Main is a TestMain for a package whose tests share one private server:
// it starts one with start, sets *srv (nil where the server is not
// installed, or the tests run with -short: the tests then skip), runs the
// tests and stops the server. Any other failure to start is loud: exit 1.
func Main(m interface{ Run() int }, start func(args ...string) (*Server, error), srv **Server) {
	flag.Parse()
	if shortmode.On() {
		os.Exit(m.Run())
	}
	s, err := start()
	if err != nil && !errors.Is(err, ErrNoServer) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	if s != nil {
		s.Stop()
	}
	os.Exit(code)
}

// NeedMariaDB skips t unless MariaDB is installed, and under -short,
// saying which: for a test that starts its servers itself, or runs a
// command that does.
func NeedMariaDB(t TB) {
	t.Helper()
	switch {
	case shortmode.On():
		t.Skip(shortmode.Why("MariaDB"))
	case !MariaDBAvailable():
		t.Skip("mariadbd not found: install it with " + MariaDBInstallHint)
	}
}

// NeedPostgres is NeedMariaDB for PostgreSQL.
func NeedPostgres(t TB) {
	t.Helper()
	switch {
	case shortmode.On():
		t.Skip(shortmode.Why("PostgreSQL"))
	case !PostgresAvailable():
		t.Skip("PostgreSQL's server not found: install it with " + PostgresInstallHint)
	}
}

// Shared is one private server for a whole test binary: started at the
// first test that asks for it, which each gets a database of its own on
// it (Database), and stopped by Stop, which TestMain calls after m.Run.
// A MariaDB or a PostgreSQL takes seconds to start; a database, a few
// milliseconds. It is safe for concurrent use.
type Shared struct {
	Start func(args ...string) (*Server, error) // StartMariaDB or StartPostgres
	once  sync.Once
	srv   *Server
	err   error
	n     atomic.Int64
}

// Server returns the shared server, starting it at the first call; t is
// skipped under -short and without the server installed, as ForTest
// skips it.
func (s *Shared) Server(t TB) *Server {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("database server"))
	}
	s.once.Do(func() { s.srv, s.err = s.Start() })
	if errors.Is(s.err, ErrNoServer) {
		t.Skip(s.err.Error())
	}
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.srv
}

// Database returns the DSN of a fresh database on the shared server.
func (s *Shared) Database(t TB) string {
	t.Helper()
	dsn, err := s.Server(t).Database(fmt.Sprintf("t%d", s.n.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Stop stops the shared server, if it was started.
func (s *Shared) Stop() {
	if s.srv != nil {
		s.srv.Stop()
	}
}
