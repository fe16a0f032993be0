package httphost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/httplimit"
	"github.com/ratelab/ratelab/internal/childproc"
	"github.com/ratelab/ratelab/internal/logevery"
	"github.com/ratelab/ratelab/internal/syncbuf"
)

// MaxWorkers bounds a pool (per host for two-hosts): each worker is a
// process with its own descriptors and memory.
const MaxWorkers = 64

// Config says what to host.
type Config struct {
	Model   harness.Model
	App     harness.App
	Workers int // pool size (per host for two-hosts); single uses 1 and cgi none
	// Addr is where the front listens; "" means 127.0.0.1 on a free port.
	Addr string
	// Listener, if set, is where the front listens instead of Addr: a
	// caller that listens first finds an address it cannot use before any
	// process starts. Close closes it.
	Listener net.Listener
	// Exe is the binary re-executed as children; "" means os.Executable().
	// It must pass Roles to childproc.RunIfChild first thing.
	Exe string
	// TrustedProxies lists the networks of the proxies in front of the
	// endpoint, as httplimit.ParseTrustedProxies reads them; "" trusts
	// none and keys on the connection's address. ForwardedHeader names
	// the one header they append the client's address to.
	TrustedProxies, ForwardedHeader string
	// Wrap, if set, is "name:argument": every process puts its store
	// inside the wrapper registered as name (RegisterWrap) — the recorder
	// of package linearizability.
	Wrap string
	// Stderr receives the children's standard error; nil means os.Stderr.
	Stderr io.Writer
	// Timeouts bound the front's clients; the zero value means
	// DefaultTimeouts.
	Timeouts Timeouts
	// CGIProcs is how many CGI programs cgi runs at once (0 means
	// DefaultCGIProcs); a request over it waits its turn for at most
	// Timeouts.Worker, then is answered 503.
	CGIProcs int

	breaker string // the state of the host's breaker (watch.go), if it has one
}

// settings is what cfg's children are given; token is the secret with
// which a worker's front vouches for its clients ("" for CGI programs).
func (cfg Config) settings(token string) settings {
	return settings{App: cfg.App, TrustedProxies: cfg.TrustedProxies, ForwardedHeader: cfg.ForwardedHeader,
		Wrap: cfg.Wrap, FrontToken: token, Breaker: cfg.breaker}
}

// StoreProcs returns how many processes of cfg's model hold a store at
// once: one under single, Workers under pool, twice as many under
// two-hosts (a pool per host), and under cgi the programs the front runs
// at once (CGIProcs, 0 meaning DefaultCGIProcs). The front holds none, and
// a worker that dies is replaced only once it has exited.
func (cfg Config) StoreProcs() int {
	switch cfg.Model {
	case harness.Pool:
		return cfg.Workers
	case harness.TwoHosts:
		return 2 * cfg.Workers
	case harness.CGI:
		return cmp.Or(cfg.CGIProcs, DefaultCGIProcs)
	}
	return 1
}

// ConnBudget returns how many connections to its store's server the
// processes of cfg open at most at once — the instance's connection
// budget: StoreProcs × App.Conns, def where App.Conns is 0, and under cgi
// one per program (ServeCGI opens one); plus the one the front's breaker
// watcher pings on (watch.go).
func (cfg Config) ConnBudget(def int) int {
	if cfg.Model == harness.CGI {
		return cfg.StoreProcs() + 1
	}
	return cfg.StoreProcs()*cmp.Or(cfg.App.Conns, def) + 1
}

// Host is a running execution model: a front on a loopback address and
// the processes behind it.
type Host struct {
	URL     string // the limited endpoint
	cfg     Config
	srv     *http.Server
	pool    *pool         // the long-lived workers, nil for cgi
	served  atomic.Int64  // requests the front passed to a pool worker
	failed  atomic.Int64  // of those, the ones whose answer the front did not get (502)
	quiet   *logevery.Log // one line a LogEvery for what clients can make happen per request
	tally   Tally         // what the workers reported, after Close
	proxyTr *http.Transport
	client  httplimit.Client // tells the front who a request's client is
	cgiErrs *syncbuf.Buffer
	cgiCap  *procCap // cgi's front, nil for the others
	bodies  *bodies  // what every front does first: read the body
	unwatch func()   // stops the store's breaker (watch.go)
}

// Start starts the model's processes and its front. Close stops them.
func Start(cfg Config) (*Host, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	client, err := ClientOf(cfg.TrustedProxies, cfg.ForwardedHeader)
	if err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", cmp.Or(cfg.Addr, "127.0.0.1:0")); err != nil {
			return nil, fmt.Errorf("httphost: listen: %w", err)
		}
	}
	h := &Host{cfg: cfg, client: client, quiet: logevery.New(workerLogger(cfg.Stderr), ratelab.LogEvery)}
	if h.unwatch, err = h.watchStore(); err != nil {
		ln.Close()
		return nil, err
	}
	front, err := h.start()
	if err != nil {
		h.unwatch()
		ln.Close()
		return nil, err
	}
	h.URL = "http://" + ln.Addr().String() + "/demo"
	h.srv = cfg.Timeouts.server(front, newConnCap())
	go h.srv.Serve(ln)
	return h, nil
}

// check reports the first thing wrong with cfg and fills in its defaults.
func (cfg *Config) check() error {
	if _, err := harness.ParseModel(string(cfg.Model)); err != nil {
		return err
	}
	if err := cfg.App.Validate(); err != nil {
		return err
	}
	if (cfg.Model == harness.Pool || cfg.Model == harness.TwoHosts) && (cfg.Workers <= 0 || cfg.Workers > harness.MaxWorkers) {
		return fmt.Errorf("httphost: workers %d must be from 1 to %d", cfg.Workers, harness.MaxWorkers)
	}
	if cfg.CGIProcs < 0 || cfg.CGIProcs > MaxCGIProcs {
		return fmt.Errorf("httphost: CGI programs at once %d must be from 1 to %d (0: %d)", cfg.CGIProcs, MaxCGIProcs, DefaultCGIProcs)
	}
	cfg.CGIProcs = cmp.Or(cfg.CGIProcs, DefaultCGIProcs)
	if cfg.App.Dir != "" {
		// CGI children run in the temporary directory: a relative
		// directory would name another one there.
		dir, err := filepath.Abs(cfg.App.Dir)
		if err != nil {
			return fmt.Errorf("httphost: %w", err)
		}
		cfg.App.Dir = dir
	}
	if cfg.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("httphost: find own executable: %w", err)
		}
		cfg.Exe = exe
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Timeouts == (Timeouts{}) {
		cfg.Timeouts = DefaultTimeouts()
	}
	return nil
}

// start starts the model's processes and returns the front's handler,
// which reads a request's body before it passes the request on, and under
// CGI first refuses what no program's environment can hold.
func (h *Host) start() (http.Handler, error) {
	cfg := h.cfg

	var front http.Handler
	switch cfg.Model {
	case harness.Single, harness.Pool:
		n := 1
		if cfg.Model == harness.Pool {
			n = cfg.Workers
		}
		ws, err := startWorkers(cfg, n)
		if err != nil {
			return nil, err
		}
		h.newPool(ws)
		front = h.roundRobin()
	case harness.TwoHosts:
		ws, err := startTwoHosts(cfg)
		if err != nil {
			return nil, err
		}
		h.newPool(ws)
		front = h.roundRobin()
	case harness.CGI:
		h.cgiErrs = &syncbuf.Buffer{Tee: cfg.Stderr, Limit: 64 << 10}
		h.cgiCap = newProcCap(cfg.CGIProcs, cfg.Timeouts.Worker, cfg.Stderr, dropUnderscored(&cgi.Handler{
			Path:   cfg.Exe,
			Dir:    os.TempDir(),
			Env:    append(childproc.Env(roleCGI), cfg.settings("").env()...),
			Stderr: h.cgiErrs,
			Logger: log.New(h.cgiErrs, "cgi host: ", 0),
		}))
		front = h.cgiCap
	}
	h.bodies = &bodies{next: front}
	if cfg.Model == harness.CGI {
		return refuseNUL(h.bodies), nil
	}
	return h.bodies, nil
}

// dropUnderscored drops every request header whose name holds an
// underscore before next sees it, as Apache httpd 2.4 and nginx do for
// their CGI and FastCGI programs. CGI hands a header to its program as
// HTTP_ and the name with '-' turned into '_', so X_Forwarded_For and
// X-Forwarded-For become one variable, and a client could overwrite the
// one a trusted proxy wrote.
func dropUnderscored(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name := range r.Header {
			if strings.Contains(name, "_") {
				r.Header.Del(name)
			}
		}
		next.ServeHTTP(w, r)
	})
}

// Close stops the front and the children, and checks that every child
// printed its result line and that the workers together served every
// request the front passed on.
func (h *Host) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	if h.proxyTr != nil {
		// Connections the front opened but never used would hold up the
		// workers' graceful shutdown.
		h.proxyTr.CloseIdleConnections()
	}
	if h.cgiCap != nil {
		h.cgiCap.report() // the refusals of the last second
	}
	if h.pool == nil {
		h.unwatch()
		return err
	}
	tally, werr := h.pool.stop()
	h.unwatch()
	h.tally = tally
	err = errors.Join(err, werr)
	// A request whose answer the front did not get may or may not have
	// reached its worker's handler: on a starved machine a connection to
	// a worker can fail either side of it.
	if passed, failed := h.served.Load(), h.failed.Load(); werr == nil && (tally.Served > passed || tally.Served < passed-failed) {
		err = errors.Join(err, fmt.Errorf("httphost: workers report %d requests served, the front passed %d (%d of them unanswered)", tally.Served, passed, failed))
	}
	return err
}

// Tally is what long-lived workers report in their result lines.
type Tally struct{ Served, Allowed, Throttled int64 }

// Tally returns the workers' result lines summed, once Close has returned;
// it is zero for the cgi model, whose children answer through CGI.
func (h *Host) Tally() Tally { return h.tally }
