package linearizability

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ratelab/ratelab/harness"
	httphost "github.com/ratelab/ratelab/http_host"
	"github.com/ratelab/ratelab/internal/childproc"
)

// named is hit(…) made for request name by process proc.
func named(name string, proc int, call, ret, remaining int64) porcupine.Operation {
	op := hit(proc, call, ret, remaining)
	op.Metadata = name
	return op
}

// saw is what a client saw: status 0 for no answer.
func saw(name string, sent, done int64, status int, remaining, retry int64) Request {
	return Request{Name: name, Sent: sent, Done: done, Status: status, Remaining: remaining, RetryAfter: retry}
}

func TestAgree(t *testing.T) {
	ok, refused := saw("a", 0, 3, 200, 2, -1), saw("b", 4, 7, 429, 0, 60)
	okHit, refusedHit := named("a", 0, 1, 2, 2), named("b", 0, 5, 6, -1)
	lost := saw("c", 8, 20, 0, -1, -1)
	for _, tt := range []struct {
		name  string
		h     History
		agree bool
	}{
		{"every answer is its hit's decision", History{Ops: []porcupine.Operation{okHit, refusedHit}, Requests: []Request{ok, refused}}, true},
		{"a 200 with no hit (the front answered alone)", History{Ops: []porcupine.Operation{refusedHit}, Requests: []Request{ok, refused}}, false},
		{"a 200 to a refused hit (the middleware let it through)", History{Ops: []porcupine.Operation{okHit, refusedHit}, Requests: []Request{ok, saw("b", 4, 7, 200, 0, -1)}}, false},
		{"another remaining count", History{Ops: []porcupine.Operation{okHit}, Requests: []Request{saw("a", 0, 3, 200, 1, -1)}}, false},
		{"another Retry-After", History{Ops: []porcupine.Operation{refusedHit}, Requests: []Request{saw("b", 4, 7, 429, 0, 59)}}, false},
		{"a hit no client sent", History{Ops: []porcupine.Operation{okHit, named("z", 0, 1, 2, 1)}, Requests: []Request{ok}}, false},
		{"two hits for one request", History{Ops: []porcupine.Operation{okHit, named("a", 0, 1, 2, 1)}, Requests: []Request{ok}}, false},
		{"no answer, nothing killed", History{Ops: []porcupine.Operation{named("c", 1, 9, -1, 0)}, Requests: []Request{lost}}, false},
		{"no answer, its hit in flight in the process killed",
			History{Ops: []porcupine.Operation{named("c", 1, 9, -1, 0)}, Requests: []Request{lost}, Kills: map[int]int64{1: 10}}, true},
		// Another goroutine of the process may call a hit between the
		// kill line and the signal: in flight when it died too.
		{"no answer, its hit called after its process's kill line",
			History{Ops: []porcupine.Operation{named("c", 1, 11, -1, 0)}, Requests: []Request{lost}, Kills: map[int]int64{1: 10}}, true},
		// A store that counts a hit, then fails it: more hits unanswered
		// than the killed process had in flight.
		{"no answer, its hit in a process not killed",
			History{Ops: []porcupine.Operation{named("c", 2, 9, -1, 0)}, Requests: []Request{lost}, Kills: map[int]int64{1: 10}}, false},
		{"no answer, no hit, after a kill (the front found its worker dead)",
			History{Requests: []Request{lost}, Kills: map[int]int64{1: 10}}, true},
		{"no answer, no hit, before any kill", History{Requests: []Request{lost}, Kills: map[int]int64{1: 30}}, false},
	} {
		err := tt.h.Agree()
		if (err == nil) != tt.agree || err != nil && !errors.Is(err, ErrClients) {
			t.Errorf("%s: Agree() = %v, want agreement %v", tt.name, err, tt.agree)
		}
	}
}

// TestMain lets the test binary be the host's children.
func TestMain(m *testing.M) {
	childproc.RunIfChild(httphost.Roles())
	os.Exit(m.Run())
}

// endpoint is the HTTP host's endpoint under the single model, on the
// memory store, every hit recorded in dir, with front put before it in
// this process.
func endpoint(t *testing.T, dir string, front func(http.Handler) http.Handler) string {
	t.Helper()
	h, err := httphost.Start(httphost.Config{Model: harness.Single, Stderr: io.Discard, Wrap: fmt.Sprintf("%s:0:0:%s", wrapName, dir),
		App: harness.App{Store: harness.Memory, Limit: 10, Window: time.Hour, Now: t0}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	target, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front(httputil.NewSingleHostReverseProxy(target)))
	t.Cleanup(srv.Close)
	return srv.URL
}

// everyFifthAlone answers every 5th request 200 itself, without the
// limiter.
func everyFifthAlone(h http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%5 == 0 {
			io.WriteString(w, "demo started\n")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// okToRefused answers 200 where the limiter refused, its fields kept, as
// a middleware letting refused hits through would.
func okToRefused(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(okWriter{w}, r)
	})
}

type okWriter struct{ http.ResponseWriter }

func (w okWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		code = http.StatusOK
	}
	w.ResponseWriter.WriteHeader(code)
}

// A front or a middleware that answers without the limiter, or other
// than it decided, makes a history whose hits all linearize, and which
// the check fails on what the clients saw; the endpoint as it is passes.
func TestChecksWhatTheClientsSaw(t *testing.T) {
	for _, tt := range []struct {
		name  string
		front func(http.Handler) http.Handler
		want  string // in the verdict, "" for linearizable
	}{
		{"the endpoint", func(h http.Handler) http.Handler { return h }, ""},
		{"a front answering every 5th request alone", everyFifthAlone, "4 disagreements among 20 requests"},
		{"a middleware answering 200 to refused hits", okToRefused, "10 disagreements among 20 requests"},
	} {
		dir := t.TempDir()
		reqs := sendAll(t.Context(), endpoint(t, dir, tt.front), Recording{Clients: 4, Hits: 5})
		h, err := Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		h.Requests = reqs
		v, err := Check(h, "", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if tt.want == "" && (!v.Linearizable || v.Clients != nil) || tt.want != "" && (v.Linearizable || !strings.Contains(v.String(), tt.want)) {
			t.Errorf("%s: %s; want %q", tt.name, v, tt.want)
		}
	}
}
