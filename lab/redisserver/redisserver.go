// Package redisserver starts a private redis-server on a free loopback port,
// for tests and demonstrations: no persistence, no other clients, stopped
// when done.
package redisserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/ratelab/ratelab/internal/freeport"
	"github.com/ratelab/ratelab/internal/poll"
	"github.com/ratelab/ratelab/internal/procstop"
	"github.com/ratelab/ratelab/internal/shortmode"
	"github.com/redis/go-redis/v9"
)

// InstallHint is what to run where redis-server is missing.
const InstallHint = "apt-get install redis-server (Debian/Ubuntu) or brew install redis (macOS)"

// ErrNoServer means redis-server is not on PATH.
var ErrNoServer = errors.New("redisserver: redis-server not found; install it with: " + InstallHint)

// Server is a running private redis-server.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string // its working directory, removed by Stop
}

// Available reports whether redis-server is on PATH.
func Available() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Start starts redis-server on 127.0.0.1 with a free port and waits until
// it answers PING. args are added to its command line.
func Start(args ...string) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNoServer
	}
	dir, err := os.MkdirTemp("", "redisserver-")
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freeport.Get()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(path, append([]string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
			"--save", "", "--appendonly", "no", "--dir", dir, "--protected-mode", "yes",
			"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf"}, args...)...)
		procstop.DieWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("redisserver: start redis-server: %w", err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
		if err := s.waitReady(5 * time.Second); err == nil {
			s.dir = dir
			return s, nil
		}
		s.Stop() // the port was taken in between; try another
	}
	os.RemoveAll(dir)
	return nil, errors.New("redisserver: redis-server did not become ready")
}

// waitReady waits until the server answers PING, on connections of its
// own rather than through go-redis, whose failed dials — the server is
// still starting — a program that routes go-redis's log to its own would
// print as warnings.
func (s *Server) waitReady(limit time.Duration) error {
	return poll.Until(limit, 10*time.Millisecond, func() error { return ping(s.Addr) })
}

// ping sends PING to the server at addr and reads its PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return err
	}
	reply := make([]byte, len("+PONG\r\n"))
	if _, err := io.ReadFull(c, reply); err != nil {
		return err
	}
	if string(reply) != "+PONG\r\n" {
		return fmt.Errorf("redisserver: PING answered %q", reply)
	}
	return nil
}

// Client returns a new client of the server.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, ContextTimeoutEnabled: true})
}

// URL returns the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Stop kills the server, waits for it and removes its directory.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
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

// ForTest starts a server for t, with args on its command line, and stops
// it when t ends; without redis-server the test is skipped with one line
// saying how to install it.
func ForTest(t TB, args ...string) *Server {
	t.Helper()
	if shortmode.On() {
		t.Skip(shortmode.Why("redis-server"))
	}
	s, err := Start(args...)
	if errors.Is(err, ErrNoServer) {
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Need skips t unless redis-server is installed, and under -short, saying
// which: for a test that starts its servers itself, or runs a command
// that does.
func Need(t TB) {
	t.Helper()
	switch {
	case shortmode.On():
		t.Skip(shortmode.Why("redis-server"))
	case !Available():
		t.Skip("redis-server not found: install it with " + InstallHint)
	}
}
