package httphost

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/logevery"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// The attacker's finding at 657a847: a client that sends requests and
// resets its connections made the pool's front write one line per
// request. A request whose client went away is no worker's failure: the
// front still counts it among the unanswered, and says so once a
// ratelab.LogEvery, with how many it held back.
func TestClientsGoneAreOneLineALogEvery(t *testing.T) {
	var log syncbuf.Buffer
	h := &Host{cfg: Config{Stderr: &log}, quiet: logevery.New(slog.New(slog.NewTextHandler(&log, nil)), ratelab.LogEvery)}
	w := &worker{proc: &childproc.Proc{Cmd: &exec.Cmd{Process: &os.Process{Pid: 42}}}}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), pickedKey{}, w))
	cancel() // the client went away
	for range 5 {
		h.proxyError(httptest.NewRecorder(), httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil), context.Canceled)
	}
	if got := strings.Count(log.String(), "\n"); got != 1 || !strings.Contains(log.String(), "a client went away before its answer") || !strings.Contains(log.String(), "pid=42") {
		t.Errorf("%d lines, want 1 naming the worker:\n%s", got, log.String())
	}
	if got := h.failed.Load(); got != 5 {
		t.Errorf("%d requests counted unanswered, want 5", got)
	}
}

// A front out of file descriptors could not reach its worker for each
// request that came while clients held its connections open, and wrote a
// line for each (the attacker's finding at 4a9c528: 3,763 lines in 40 s).
// That is load: 503, one line a LogEvery.
func TestAFrontOutOfDescriptorsIsOneLineALogEvery(t *testing.T) {
	var log syncbuf.Buffer
	h := &Host{cfg: Config{Stderr: &log}, quiet: logevery.New(slog.New(slog.NewTextHandler(&log, nil)), ratelab.LogEvery)}
	w := &worker{proc: &childproc.Proc{Cmd: &exec.Cmd{Process: &os.Process{Pid: 42}}}}
	ctx := context.WithValue(context.Background(), pickedKey{}, w)
	emfile := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("socket", syscall.EMFILE)}
	for range 5 {
		rec := httptest.NewRecorder()
		h.proxyError(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil), emfile)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("status %d, want 503", rec.Code)
		}
	}
	if got := strings.Count(log.String(), "\n"); got != 1 || !strings.Contains(log.String(), "out of file descriptors") {
		t.Errorf("%d lines, want 1 saying why:\n%s", got, log.String())
	}
}
