package httphost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"strings"
	"time"

	"github.com/ratelab/ratelab"
	"github.com/ratelab/ratelab/harness"
	"github.com/ratelab/ratelab/httplimit"
)

// ErrNotCGI is the error of a CGI program run outside a CGI server.
var ErrNotCGI = errors.New("not under a CGI server (GATEWAY_INTERFACE is unset): " +
	"a web server runs this once per request, from a wrapper script in its cgi-bin")

// ServeCGI serves exactly one request as a CGI program, the way a web
// server nobody in this repository wrote runs it on shared hosting:
// net/http/cgi reads the request from the CGI environment and stdin and
// writes the response to stdout. REMOTE_ADDR becomes the request's
// RemoteAddr, so the key is the client's address, as the original's.
// Nothing else may be printed on stdout.
//
// a was checked where it entered the process (App.Check), and is not
// checked again; client says how it tells its clients apart (behind
// trusted proxies, by the address they pass on). Every process prepares the store as serve does once at
// start — a database store's tables are created if they are missing —
// unless its host's breaker says the server does not answer. A
// configuration error (an unusable state directory, a database that
// refuses the credentials) is answered 500 with a body that
// names no detail, and a one-line reason goes to stderr, which the web
// server writes to its error log; passwords are masked there too; the
// error returned then wraps harness.ErrConfig. Redis
// is not asked before the hit (a round trip per request): credentials it
// refuses are found by the hit, answered 503, and never let through.
func ServeCGI(a harness.CheckedApp, client httplimit.Client, stderr io.Writer) error {
	return serveCGI(checked{settings: settings{App: a.App}, app: a, client: client}, stderr)
}

// serveCGI is ServeCGI with a host's settings.
func serveCGI(c checked, stderr io.Writer) error {
	if os.Getenv("GATEWAY_INTERFACE") == "" {
		return ErrNotCGI
	}
	if _, err := cgi.Request(); err != nil {
		return badRequest(err, stderr)
	}
	c.App.Conns = 1 // one hit, then the process ends
	logger := workerLogger(stderr)
	store, err := c.newStore(logger)
	if err != nil { // a store that cannot be opened: a connection string, a directory
		return CGIError(configError{err}, stderr)
	}
	defer store.Close()
	if !store.down() { // the host's breaker: the server does not answer
		ctx, cancel := context.WithTimeout(context.Background(), prepareWait)
		err = store.prepare(ctx)
		cancel()
	}
	var ne net.Error
	switch {
	case errors.Is(err, harness.ErrConfig):
		return CGIError(err, stderr)
	case errors.Is(err, ratelab.ErrBusy) || errors.As(err, &ne) && ne.Timeout():
		logger.Warn("ratelab cgi: the store's server is too busy to answer; the hit waits its turn, refused as busy if its time runs out", "err", err)
	case err != nil:
		logger.Warn("ratelab cgi: the store's server cannot be reached; the hit follows the fail policy", "err", err)
	}
	h, err := c.handlerFor(store, logger)
	if err != nil {
		return CGIError(err, stderr)
	}
	return cgi.Serve(withPID(h))
}

// prepareWait bounds a CGI process's preparation of its store.
const prepareWait = 2 * time.Second

// configError is err, also a harness.ErrConfig, its message unchanged.
type configError struct{ error }

func (e configError) Unwrap() []error { return []error{e.error, harness.ErrConfig} }

// CGIError answers the one request of a CGI program that cannot serve it
// with 500 and a body that names no detail — an error can quote a path or
// a server's address, which are not a visitor's business — and writes
// err as one line to stderr, the web server's error log.
func CGIError(err error, stderr io.Writer) error {
	if _, rerr := cgi.Request(); rerr != nil {
		return badRequest(rerr, stderr)
	}
	fmt.Fprintln(stderr, "ratelab cgi: "+strings.ReplaceAll(err.Error(), "\n", " "))
	if serr := cgi.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, CGIErrorBody, http.StatusInternalServerError)
	})); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// badRequest answers a request that cannot be read from the CGI
// environment (net/http/cgi's Request refused it, and Serve would write
// nothing) with 400, and writes err as one line to stderr.
func badRequest(err error, stderr io.Writer) error {
	fmt.Fprintln(stderr, "ratelab cgi: the request cannot be read from the CGI environment: "+strings.ReplaceAll(err.Error(), "\n", " "))
	_, werr := io.WriteString(os.Stdout, "Status: 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nbad request\n")
	return errors.Join(err, werr)
}

// CGIErrorBody is the body of CGIError's answer.
const CGIErrorBody = "ratelab cgi: configuration error; the reason is in the web server's error log"
