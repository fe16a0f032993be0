//go:build unix

package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratelab/ratelab/internal/syncbuf"
)

// A terminal's Ctrl-C signals the whole process group: the pool's workers
// as well as serve. serve must still stop them itself, in order, and exit
// 0 — before, the workers died first and serve exited 1 ("worker … exited
// (signal: interrupt) before printing result"). So must SIGTERM and SIGHUP
// to the group: timeout(1) and a service manager stop a whole group with
// SIGTERM, a terminal that closes hangs up on its job (the finding: under
// timeout serve exited 1, "worker … exited (signal: terminated)").
func TestServeStopsCleanlyOnASignalToItsGroup(t *testing.T) {
	for _, tt := range []struct {
		model string
		sig   syscall.Signal
	}{{"pool", syscall.SIGINT}, {"pool", syscall.SIGTERM}, {"pool", syscall.SIGHUP}, {"cgi", syscall.SIGTERM}, {"two-hosts", syscall.SIGTERM}} {
		model, sig := tt.model, tt.sig
		t.Run(model+" "+sig.String(), func(t *testing.T) {
			cmd, url, stderr, tmp := startServeGroup(t, "-model", model, "-store", "file", "-addr", "127.0.0.1:0")
			resp, err := http.Post(url, "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			require.NoError(t, syscall.Kill(-cmd.Process.Pid, sig))
			assert.NoError(t, cmd.Wait(), "serve's exit after %v to its group; stderr: %s", sig, stderr.String())
			assertEmpty(t, tmp)
		})
	}
}

// The attacker's finding: under -model cgi, SIGTERM to serve's group
// killed the CGI programs answering at that moment, and their clients got
// 500. A CGI program now finishes its one request, as a pool's worker
// finishes its own: a hit waiting for its key's lock when the group is
// signalled is answered once the lock is free.
func TestServeFinishesACGIRequestOnASignalToItsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the CGI program in /proc")
	}
	dir := t.TempDir()
	cmd, url, stderr, _ := startServeGroup(t, "-model", "cgi", "-store", "file", "-dir", dir, "-addr", "127.0.0.1:0")
	resp, err := http.Post(url, "", nil) // makes the client's state file
	require.NoError(t, err)
	resp.Body.Close()
	states, err := filepath.Glob(filepath.Join(dir, "rate-limits", "*.json"))
	require.NoError(t, err)
	require.Len(t, states, 1, "the client's state file")
	f, err := os.OpenFile(states[0], os.O_RDWR, 0)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	answer := make(chan int, 1)
	go func() {
		resp, err := http.Post(url, "", nil)
		if err != nil {
			answer <- 0
			return
		}
		resp.Body.Close()
		answer <- resp.StatusCode
	}()
	waitForOpener(t, states[0], cmd.Process.Pid, answer) // the CGI program, at the lock
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_UN))
	assert.Equal(t, http.StatusOK, <-answer, "the second hit's answer; stderr: %s", stderr.String())
	assert.NoError(t, cmd.Wait(), "serve's exit; stderr: %s", stderr.String())
}

// waitForOpener waits until a process of process group pgid other than
// its leader has path open; it fails t if the request's answer comes
// first.
func waitForOpener(t *testing.T, path string, pgid int, answer <-chan int) {
	t.Helper()
	for {
		select {
		case code := <-answer:
			t.Fatalf("got answer %d while the lock was held, want the CGI program waiting for it", code)
		default:
		}
		procs, _ := filepath.Glob("/proc/[0-9]*")
		for _, p := range procs {
			stat, err := os.ReadFile(filepath.Join(p, "stat"))
			fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if err != nil || len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || filepath.Base(p) == strconv.Itoa(pgid) {
				continue
			}
			fds, _ := filepath.Glob(filepath.Join(p, "fd", "*"))
			for _, fd := range fds {
				if target, _ := os.Readlink(fd); target == path {
					return
				}
			}
		}
		runtime.Gosched()
	}
}

// The newcomer's finding: serve 2>&1 | head died of SIGPIPE at its first
// line after head had gone, and left its breaker's directory in the
// temporary directory. A reader gone now stops serve as Ctrl-C does: exit
// 0, its workers stopped, nothing left behind.
func TestServeStopsCleanlyWhenItsReaderGoes(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	tmp := t.TempDir()
	cmd := exec.Command(exe, "serve", "-model", "pool", "-workers", "2", "-store", "redis", "-redis", "redis://127.0.0.1:1/0", "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), envRunCLI+"=1", "TMPDIR="+tmp)
	r, w, err := os.Pipe() // serve 2>&1 | head: one pipe for both streams
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = w, w
	require.NoError(t, cmd.Start())
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewReader(r)
	url := ""
	for line := ""; !strings.HasPrefix(line, "Ctrl-C stops it"); { // the banner's last line
		line, err = lines.ReadString('\n')
		require.NoError(t, err, "serve's banner ended early")
		if strings.HasPrefix(line, "http://") {
			url = line
		}
	}
	require.NotEmpty(t, url, "serve printed no URL")
	r.Close()                                               // head has its lines and goes
	resp, err := http.Post(strings.TrimSpace(url), "", nil) // the outage's log line meets a broken pipe
	require.NoError(t, err)
	resp.Body.Close()
	assert.NoError(t, cmd.Wait(), "serve's exit once its reader went")
	assertEmpty(t, tmp)
}

// The newcomer's finding: timeout -s INT signals serve, then its group, so
// serve met a second SIGINT while it stopped; after the first, its
// signals had their default action again, and the second killed it (exit
// 130) before it removed its state directory. Signals that follow the
// first are ignored until serve is done.
func TestServeStopsCleanlyOnSignalsInARow(t *testing.T) {
	cmd, _, stderr, tmp := startServeGroup(t, "-model", "cgi", "-store", "file", "-addr", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	require.NoError(t, syscall.Kill(cmd.Process.Pid, syscall.SIGINT))
	for {
		select {
		case err := <-done:
			assert.NoError(t, err, "serve's exit; stderr: %s", stderr.String())
			assertEmpty(t, tmp)
			return
		default:
			syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) // again and again, to the group, until serve is gone
			runtime.Gosched()
		}
	}
}

// startServeGroup starts serve with args in a process group of its own,
// as a terminal's job is, its TMPDIR a fresh directory, and returns it
// once it has printed its URL, with that directory.
func startServeGroup(t *testing.T, args ...string) (cmd *exec.Cmd, url string, stderr *syncbuf.Buffer, tmp string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	tmp = t.TempDir() // the file store's scratch directory goes here, and must go
	cmd = exec.Command(exe, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), envRunCLI+"=1", "TMPDIR="+tmp)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr = new(syncbuf.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "serve printed no URL: %s", stderr.String())
	return cmd, strings.TrimSpace(line), stderr, tmp
}

// assertEmpty fails t if anything is left in dir.
func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	left, _ := os.ReadDir(dir)
	assert.Empty(t, left, "left in the temporary directory")
}

// The attacker's finding at 5879fdb: a client that closed its connection
// while serve wrote the answers to its pipelined requests stopped serve
// (exit 0, in a few tries): serve listened for SIGPIPE to stop when its
// reader goes, and a write to a socket whose client has gone raises one
// too. A SIGPIPE while stdout and stderr still have their readers is now
// nothing: serve goes on answering, and stops on Ctrl-C as before.
func TestServeOutlivesASIGPIPEFromAClient(t *testing.T) {
	cmd, url, stderr, tmp := startServeGroup(t, "-model", "single", "-store", "file", "-limit", "1000", "-addr", "127.0.0.1:0")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	require.NoError(t, syscall.Kill(cmd.Process.Pid, syscall.SIGPIPE))
	for i := range 200 { // the old serve was gone long before these
		resp, err := http.Post(url, "", nil)
		require.NoError(t, err, "request %d after the SIGPIPE; stderr: %s", i, stderr.String())
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "request %d after the SIGPIPE", i)
	}
	select {
	case err := <-done:
		t.Fatalf("serve exited (%v) after a SIGPIPE with its readers there; stderr: %s", err, stderr.String())
	default:
	}
	require.NoError(t, syscall.Kill(cmd.Process.Pid, syscall.SIGINT))
	assert.NoError(t, <-done, "serve's exit on Ctrl-C; stderr: %s", stderr.String())
	assertEmpty(t, tmp)
}
