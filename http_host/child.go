package httphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/httplimit"
	"github.com/ratelab/ratelab/internal/childproc"
)

// The harness's child roles.
const (
	roleServer = "httphost/server" // a long-lived HTTP worker (single, pool)
	roleCGI    = "httphost/cgi"    // one request under net/http/cgi, then exit
)

// Lines a child prints on stdout for its parent.
const (
	readyPrefix  = "ratelab-child ready "
	resultPrefix = "ratelab-child result "
)

// Roles are the harness's child roles, for childproc.RunIfChild: a
// long-lived worker and a CGI program. The binary that hosts an execution
// model (Config.Exe) must pass them to RunIfChild first thing.
func Roles() childproc.Roles {
	return childproc.Roles{
		roleServer: func() error {
			// The front ends its workers by closing their stdin, once it
			// has stopped taking requests (and its death closes it too);
			// a signal sent to the whole process group — a terminal's
			// Ctrl-C or hang-up, timeout(1)'s or a service manager's
			// SIGTERM — must not end them before it.
			signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return serveChild(os.Stdin, os.Stdout)
		},
		roleCGI: func() error {
			// One request, bounded by the store's waits: a signal to
			// the group must not cut it short with a 500 while the front
			// stops, any more than it cuts short a worker's.
			signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			return cgiChild()
		},
	}
}

// settings is what every process a host starts is given, whole, as one
// value (env.go): the App, and what the host adds to it.
type settings struct {
	App harness.App
	// TrustedProxies and ForwardedHeader are Config's.
	TrustedProxies, ForwardedHeader string
	// Wrap is Config's.
	Wrap string
	// FrontToken, set by the host for its workers, is the secret with
	// which their front vouches for the client address it passes on.
	FrontToken string
	// Breaker, set by the host for its children when their store answers
	// pings, is the state of the breaker the host watches (package
	// breaker): each process's store stands behind it.
	Breaker string
}

// checked is settings checked once, where they entered the process: the
// App's store and rule, and the client parsed. What is built from it
// checks nothing again.
type checked struct {
	settings
	app    harness.CheckedApp
	client httplimit.Client
}

// check reports the first thing wrong with s, in words a user can act
// on, or returns s checked.
func (s settings) check() (checked, error) {
	app, err := s.App.Check()
	if err != nil {
		return checked{}, err
	}
	client, err := ClientOf(s.TrustedProxies, s.ForwardedHeader)
	if err != nil {
		return checked{}, err
	}
	return checked{s, app, client}, nil
}

// ClientOf is how the endpoint tells its clients apart: by the
// connection's address, or behind trusted proxies (as
// httplimit.ParseTrustedProxies reads them) by the address they pass on
// in header.
func ClientOf(trustedProxies, header string) (httplimit.Client, error) {
	proxies, err := httplimit.ParseTrustedProxies(trustedProxies)
	if err != nil {
		return httplimit.Client{}, err
	}
	c := httplimit.Client{TrustedProxies: proxies, Header: header}
	return c, c.Check()
}

// handler builds the endpoint with a store of its own. Called once per
// process, it is exactly what the lesson is about: a memory store made
// here lives and dies with this process.
func (c checked) handler(logger *slog.Logger) (http.Handler, error) {
	store, err := c.newStore(logger)
	if err != nil {
		return nil, err
	}
	return c.handlerFor(store, logger)
}

// handlerFor builds the endpoint on store.
func (c checked) handlerFor(store ratelab.Store, logger *slog.Logger) (http.Handler, error) {
	store, err := wrap(c.Wrap, store)
	if err != nil {
		return nil, err
	}
	l, err := ratelab.NewLimiter(store, c.app.CheckedRule())
	if err != nil {
		return nil, err
	}
	metrics := new(httplimit.Metrics)
	mw := &httplimit.Middleware{Limiter: l, Key: frontKey(c.FrontToken, c.client), Logger: logger, Metrics: metrics}
	if now := c.App.Now; !now.IsZero() {
		mw.Now = func() time.Time { return now }
	}
	pid := strconv.Itoa(os.Getpid())
	mux := http.NewServeMux()
	// The process's own counters: under single, all of them; under a pool,
	// the worker that answers; under CGI, one request's.
	mux.Handle("GET /metrics", metrics)
	mux.Handle("/", withRequestName(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "demo started by process %s\n", pid)
	}))))
	return mux, nil
}

// withPID marks every response with the process that produced it, so a
// reader running curl -i sees which process answered.
func withPID(h http.Handler) http.Handler {
	pid := strconv.Itoa(os.Getpid())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelab-Pid", pid)
		h.ServeHTTP(w, r)
	})
}

// serveChild is a long-lived worker: it serves the app on a loopback port,
// prints its ready line, serves until its stdin closes (the parent is done
// with it, or died), then prints its result line.
// listenFD names the descriptor of the listening socket a worker's front
// made for it and keeps (see seat), in the worker's environment.
const listenFD = "RATELAB_LISTEN_FD"

// listen returns the socket the front passed, or a new one on a free
// loopback port for a worker started without one.
func listen() (net.Listener, error) {
	v := os.Getenv(listenFD)
	if v == "" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	fd, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", listenFD, v, err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close() // FileListener holds a duplicate
	return net.FileListener(f)
}

func serveChild(stdin io.Reader, stdout io.Writer) error {
	app, err := fromEnv()
	if err != nil {
		return err
	}
	logger := workerLogger(os.Stderr)
	h, err := app.handler(logger)
	if err != nil {
		return err
	}
	var served, allowed, throttled atomic.Int64
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		served.Add(1)
		switch sw.status {
		case http.StatusOK:
			allowed.Add(1)
		case http.StatusTooManyRequests:
			throttled.Add(1)
		}
	})
	ln, err := listen()
	if err != nil {
		return err
	}
	srv := DefaultTimeouts().server(withPID(counted), newConnCap())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "%saddr=%s pid=%d\n", readyPrefix, ln.Addr(), os.Getpid())

	io.Copy(io.Discard, stdin) // until the parent closes our stdin
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(stdout, "%spid=%d served=%d allowed=%d throttled=%d\n", resultPrefix,
		os.Getpid(), served.Load(), allowed.Load(), throttled.Load())
	return nil
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// cgiChild serves one request as a CGI program, configured by the
// harness's environment protocol.
func cgiChild() error {
	if os.Getenv("GATEWAY_INTERFACE") == "" {
		return ErrNotCGI
	}
	app, err := fromEnv()
	if err != nil {
		return err
	}
	return serveCGI(app, os.Stderr)
}
