package sqlserver

import (
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/ratelab/ratelab/internal/freeport"
)

// MariaDBInstallHint is what to run where mariadbd is missing.
const MariaDBInstallHint = "apt-get install mariadb-server (Debian/Ubuntu) or brew install mariadb (macOS)"

// MariaDBAvailable reports whether mariadbd and mariadb-install-db are
// installed.
func MariaDBAvailable() bool {
	_, _, err := mariadbBinaries()
	return err == nil
}

func mariadbBinaries() (server, install string, err error) {
	for _, name := range []string{"mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"} {
		if server, err = exec.LookPath(name); err == nil {
			break
		}
	}
	if err != nil {
		return "", "", fmt.Errorf("%w: mariadbd not found; install it with: %s", ErrNoServer, MariaDBInstallHint)
	}
	for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
		if install, err = exec.LookPath(name); err == nil {
			return server, install, nil
		}
	}
	return "", "", fmt.Errorf("%w: mariadb-install-db not found; install it with: %s", ErrNoServer, MariaDBInstallHint)
}

// StartMariaDB initialises a data directory and starts mariadbd on a free
// port of 127.0.0.1, with a database "ratelab" and a user "ratelab" who
// may use it and see other sessions' lock waits (PROCESS). args are added
// to mariadbd's command line.
func StartMariaDB(args ...string) (*Server, error) {
	server, install, err := mariadbBinaries()
	if err != nil {
		return nil, err
	}
	return startIn("mariadb", func(s *Server) error { return s.startMariaDB(server, install, args) })
}

func (s *Server) startMariaDB(server, install string, args []string) error {
	data, logFile := filepath.Join(s.dir, "data"), filepath.Join(s.dir, "log")
	initSQL := fmt.Sprintf(`CREATE DATABASE ratelab;
CREATE USER 'ratelab'@'127.0.0.1' IDENTIFIED BY '%s';
GRANT ALL ON *.* TO 'ratelab'@'127.0.0.1';
`, Password)
	if err := os.WriteFile(filepath.Join(s.dir, "init.sql"), []byte(initSQL), 0o600); err != nil {
		return err
	}
	acct, err := dropRoot("mysql", s.dir)
	if err != nil {
		return err
	}
	userArgs := []string{}
	if acct != nil {
		userArgs = []string{"--user=mysql"}
	}
	if err := run(acct, logFile, install, append([]string{"--no-defaults", "--datadir=" + data,
		"--auth-root-authentication-method=socket", "--skip-test-db"}, userArgs...)...); err != nil {
		return err
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd, err := command(acct, logFile, server, append([]string{"--no-defaults", "--datadir=" + data,
		"--socket=" + filepath.Join(s.dir, "sock"), "--pid-file=" + filepath.Join(s.dir, "pid"),
		"--bind-address=127.0.0.1", "--port=" + strconv.Itoa(port), "--skip-name-resolve",
		"--init-file=" + filepath.Join(s.dir, "init.sql"), "--innodb-buffer-pool-size=32M",
		"--log-error=" + logFile}, append(userArgs, args...)...)...)
	if err != nil {
		return err
	}
	if err := s.start(cmd); err != nil {
		return err
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "ratelab", Password, "tcp", s.Addr, "ratelab"
	s.DSN = cfg.FormatDSN()
	s.newDatabase = func(name string) (string, error) {
		db, err := sql.Open("mysql", s.DSN)
		if err != nil {
			return "", err
		}
		defer db.Close()
		if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
			return "", err
		}
		c := cfg.Clone()
		c.DBName = name
		return c.FormatDSN(), nil
	}
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	return s.waitReady(30*time.Second, logFile, db.PingContext)
}

// MariaDBForTest starts a private MariaDB for t and stops it when t ends;
// without MariaDB installed the test is skipped with one line saying how
// to install it.
func MariaDBForTest(t TB) *Server {
	t.Helper()
	return forTest(t, func() (*Server, error) { return StartMariaDB() })
}
