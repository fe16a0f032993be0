package harness

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cgi"
	"os"
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
// A configuration error (an unusable state directory, an invalid rule)
// is answered 500 with a one-line reason in the body, and the same line
// goes to stderr, which the web server writes to its error log.
func ServeCGI(a App, stderr io.Writer) error {
	if os.Getenv("GATEWAY_INTERFACE") == "" {
		return ErrNotCGI
	}
	h, err := a.Handler(slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return CGIError(err, stderr)
	}
	return cgi.Serve(withPID(h))
}

// CGIError answers the one request of a CGI program that cannot serve it
// with 500 and err as one line, and writes the line to stderr.
func CGIError(err error, stderr io.Writer) error {
	line := "ratelab cgi: " + err.Error()
	fmt.Fprintln(stderr, line)
	if serr := cgi.Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, line, http.StatusInternalServerError)
	})); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}
