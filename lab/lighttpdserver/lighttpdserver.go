// Package lighttpdserver starts a private lighttpd with mod_cgi on a free
// loopback port, for tests: its own document root with a cgi-bin, its own
// error log, stopped and removed when the test ends.
package lighttpdserver

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ratelab/ratelab/internal/freeport"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/procstop"
	"github.com/ratelab/ratelab/internal/shortmode"
)

// InstallHint is what to run where lighttpd is missing.
const InstallHint = "apt-get install lighttpd (Debian/Ubuntu) or brew install lighttpd (macOS)"

// Server is a running lighttpd.
type Server struct {
	URL    string // http://127.0.0.1:PORT
	Root   string // the document root; CGI programs go in Root/cgi-bin
	LogDir string // holds error.log
	cmd    *exec.Cmd
}

// !+config

// Config is the CGI part of the server's configuration, as the
// documentation shows it: mod_cgi, every file under /cgi-bin/ run as a
// program.
const Config = `server.modules = ("mod_cgi")
$HTTP["url"] =~ "^/cgi-bin/" { cgi.assign = ("" => "") }
`

// !-config

// binary is lighttpd's path; t is skipped without it, and under -short.
func binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip(shortmode.Why("lighttpd"))
	}
	if path, err := exec.LookPath("lighttpd"); err == nil {
		return path
	}
	if p, err := os.Stat("/usr/sbin/lighttpd"); err == nil && !p.IsDir() {
		return "/usr/sbin/lighttpd"
	}
	t.Skip("lighttpd not found: install it with " + InstallHint)
	return ""
}

// ForTest starts lighttpd for t with the CGI programs in scripts (name →
// content, made executable), and stops it when t ends. Without lighttpd
// the test is skipped with one line saying how to install it.
func ForTest(t testing.TB, scripts map[string]string) *Server {
	t.Helper()
	path := binary(t)
	dir := t.TempDir()
	s := &Server{Root: filepath.Join(dir, "www"), LogDir: filepath.Join(dir, "log")}
	for _, d := range []string{filepath.Join(s.Root, "cgi-bin"), s.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range scripts {
		if err := os.WriteFile(filepath.Join(s.Root, "cgi-bin", name), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "lighttpd.conf")
		body := fmt.Sprintf("server.document-root = %q\nserver.bind = \"127.0.0.1\"\nserver.port = %d\nserver.errorlog = %q\nserver.breakagelog = %q\n%s",
			s.Root, port, filepath.Join(s.LogDir, "error.log"), filepath.Join(s.LogDir, "cgi-stderr.log"), Config)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		s.cmd = exec.Command(path, "-D", "-f", conf)
		procstop.DieWithParent(s.cmd)
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("lighttpdserver: start: %v", err)
		}
		s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
		if err := s.waitReady(5 * time.Second); err == nil {
			t.Cleanup(s.stop)
			return s
		}
		s.stop() // the port was taken in between; try another
	}
	t.Fatal("lighttpdserver: lighttpd did not become ready")
	return nil
}

// ErrorLog returns what lighttpd has written to its error log, and what
// its CGI programs wrote to stderr (server.breakagelog).
func (s *Server) ErrorLog() string {
	b, _ := os.ReadFile(filepath.Join(s.LogDir, "error.log"))
	c, _ := os.ReadFile(filepath.Join(s.LogDir, "cgi-stderr.log"))
	return string(b) + string(c)
}

func (s *Server) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

func (s *Server) waitReady(limit time.Duration) error {
	err := poll.Until(limit, 10*time.Millisecond, func() error {
		resp, err := http.Get(s.URL + "/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("lighttpdserver: not ready: %w", err)
	}
	return nil
}
