//go:build unix

package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
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
// (signal: interrupt) before printing result").
func TestServePoolStopsCleanlyOnCtrlCToItsGroup(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "serve", "-model", "pool", "-workers", "2", "-store", "memory", "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), envRunCLI+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a terminal's job is
	stderr := new(syncbuf.Buffer)
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "serve printed no URL: %s", stderr.String())
	resp, err := http.Post(strings.TrimSpace(line), "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, syscall.SIGINT))
	err = cmd.Wait()
	assert.NoError(t, err, "serve's exit after Ctrl-C to its group; stderr: %s", stderr.String())
}
